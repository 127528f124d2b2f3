package bundle

import (
	"errors"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
)

// Keyless bundles (ADR 0010): the attestation's keyid is
// envelope.KeylessPrefix and 64 hex, and the archive carries
// envelope.MaterialFile, a Sigstore bundle whose certificate vouches for
// the signing key and whose timestamps witness when it signed. The
// material is checked by the envelope.MaterialVerifiers given with
// WithMaterialVerifiers; the witnessed time then stands for the signing
// time.

// MaxKeylessSigningDelay is how far before its witnessed time a keyless
// bundle's signed_at may lie: the time between signing the statement and
// the timestamp authority's answer (or the log's entry).
const MaxKeylessSigningDelay = 10 * time.Minute

// WithMaterialVerifiers verifies keyless bundles with mv (bundle/sigstore's
// Verifiers: a Sigstore trusted root and identity policies). Without it a
// keyless bundle is refused (unknown-key).
func WithMaterialVerifiers(mv envelope.MaterialVerifiers) VerifierOption {
	return func(v *Verifier) { v.material = mv }
}

// keyIDOf is the keyid of a strictly parsed envelope, or "" when Parse
// refuses it (the key path then refuses it as malformed).
func keyIDOf(att []byte) string {
	env, _, err := envelope.Parse(att, PayloadType, AttestationFile)
	if err != nil {
		return ""
	}
	return env.Signatures[0].KeyID
}

// openKeyless opens a keyless attestation with the key its verification
// material vouches for: the member must be there (missing-file), a
// verifier of material must be given (unknown-key), and the material's
// refusal is mapped to its reason (refusalReason).
func openKeyless(att []byte, id string, files map[string][]byte, mv envelope.MaterialVerifiers) ([]byte, envelope.WitnessedKey, error) {
	material, ok := files[envelope.MaterialFile]
	if !ok {
		return nil, nil, refuse(MissingFile, fmt.Sprintf("%s is missing: keyid %q is keyless, its key is vouched for by that member", envelope.MaterialFile, clip(id)), "", nil)
	}
	if mv == nil {
		return nil, nil, refuse(UnknownKey, fmt.Sprintf("keyid %q is keyless: verifying it needs a Sigstore trusted root (--trusted-root) and an identity", clip(id)), "", nil)
	}
	payload, wk, err := envelope.OpenWithMaterial(att, PayloadType, AttestationFile, material, mv)
	if err == nil {
		return payload, wk, nil
	}
	var oe *envelope.Error
	if !errors.As(err, &oe) || oe.Reason != envelope.MaterialRefused {
		_, _, err := openAttestationError(err)
		return nil, nil, err
	}
	if r, ok := refusalReason(oe.Err); ok {
		return nil, nil, refuse(r, fmt.Sprintf("%s: %v", envelope.MaterialFile, oe.Err), "", err)
	}
	return nil, nil, refuse(UnknownKey, fmt.Sprintf("keyid %q: %s vouches for no trusted key: %v", clip(id), envelope.MaterialFile, oe.Err), "", err)
}

// refusal is a refused verification material that names its reason
// (bundle/sigstore's *VerifyError: "certificate-invalid", …).
type refusal interface{ RefusalReason() string }

// materialReasons are the reasons a refusal may name, as bundle Reasons.
var materialReasons = map[string]Reason{
	string(CertificateInvalid):     CertificateInvalid,
	string(TimestampInvalid):       TimestampInvalid,
	string(TlogInvalid):            TlogInvalid,
	string(MaterialMismatch):       MaterialMismatch,
	string(IdentityMismatch):       IdentityMismatch,
	string(SigningTimeImplausible): SigningTimeImplausible,
	string(Malformed):              Malformed,
}

// refusalReason is the bundle Reason err's refusal names, if it names a
// known one.
func refusalReason(err error) (Reason, bool) {
	var r refusal
	if !errors.As(err, &r) {
		return "", false
	}
	reason, ok := materialReasons[r.RefusalReason()]
	return reason, ok
}

// checkWitnessedKey applies the witnessed time to a keyless bundle: there
// must be one (timestamp-invalid); signed_at may lie at most
// MaxKeylessSigningDelay before it and MaxClockSkew after it
// (signing-time-implausible); the identity must be valid then (its
// CheckWitnessed, e.g. a trust store identity's status and window).
func (b *unpacked) checkWitnessedKey() error {
	w := b.wk.WitnessedAt()
	if w.IsZero() {
		return refuse(TimestampInvalid, envelope.MaterialFile+": no witnessed time", b.id, nil)
	}
	at, wt := b.signedAt.UTC().Format(time.RFC3339Nano), w.UTC().Format(time.RFC3339Nano)
	if b.signedAt.Before(w.Add(-MaxKeylessSigningDelay)) {
		return refuse(SigningTimeImplausible, fmt.Sprintf("signed_at %s is more than %s before the signature was witnessed at %s", at, MaxKeylessSigningDelay, wt), b.id, nil)
	}
	if b.signedAt.After(w.Add(MaxClockSkew)) {
		return refuse(SigningTimeImplausible, fmt.Sprintf("signed_at %s is after the signature was witnessed at %s (+%s)", at, wt, MaxClockSkew), b.id, nil)
	}
	if err := b.wk.CheckWitnessed(w); err != nil {
		return refuseKey(err, b.id)
	}
	return nil
}

// checkMaterialMember refuses verification material in a key-signed
// bundle: its key is the trust store's, nothing else vouches for it.
func (b *unpacked) checkMaterialMember() error {
	if _, ok := b.files[envelope.MaterialFile]; ok && b.wk == nil {
		return refuse(ExtraFile, envelope.MaterialFile+" is in a key-signed bundle: only a keyless bundle carries verification material", b.id, nil)
	}
	return nil
}

// unsigned reports whether name is a member the statement does not list:
// the attestation, and a keyless bundle's verification material.
func (b *unpacked) unsigned(name string) bool {
	return name == AttestationFile || b.wk != nil && name == envelope.MaterialFile
}

// noKeys is the Verifiers of a Verifier made without a store.
type noKeys struct{}

func (noKeys) Verifier(id string) (envelope.TrustedKey, error) {
	return nil, &trust.KeyError{Reason: trust.UnknownKey, KeyID: id, Detail: "no trust store was given"}
}
