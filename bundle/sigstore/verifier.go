package sigstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// MaxTrustedRootSize bounds a trusted_root.json (the public-good one is
// about 10 KB).
const MaxTrustedRootSize = 4 << 20

// MaxIdentities bounds the identity policies of one Verifiers.
const MaxIdentities = 1024

// Verifiers verifies keyless material against a Sigstore trusted root and
// identity policies. It implements envelope.MaterialVerifiers.
type Verifiers struct {
	trusted root.TrustedMaterial
	ids     []Identity
}

// NewVerifiers reads a Sigstore trusted root (trusted_root.json bytes, the
// standard format; duplicate members refused) and returns a verifier of
// keyless material against it for the identities (at least one, each with
// a signer workflow or a source repository).
func NewVerifiers(trustedRoot []byte, ids []Identity) (*Verifiers, error) {
	if len(trustedRoot) > MaxTrustedRootSize {
		return nil, fmt.Errorf("trusted root: %d bytes, over the %d-byte limit", len(trustedRoot), MaxTrustedRootSize)
	}
	var doc map[string]any
	if err := strictjson.DecodeOpen(trustedRoot, &doc); err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	tr, err := root.NewTrustedRootFromJSON(trustedRoot)
	if err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	if len(tr.FulcioCertificateAuthorities()) == 0 {
		return nil, errors.New("trusted root: no certificate authority")
	}
	if len(ids) == 0 {
		return nil, errors.New("keyless verifier: no identity to match certificates against")
	}
	if len(ids) > MaxIdentities {
		return nil, fmt.Errorf("keyless verifier: %d identities, at most %d", len(ids), MaxIdentities)
	}
	for i := range ids {
		if err := ids[i].check(); err != nil {
			return nil, fmt.Errorf("keyless verifier: %w", err)
		}
	}
	return &Verifiers{trusted: tr, ids: append([]Identity(nil), ids...)}, nil
}

// LoadVerifiers is NewVerifiers of the trusted root file at path.
func LoadVerifiers(trustedRootPath string, ids []Identity) (*Verifiers, error) {
	b, err := bounded.ReadFile(trustedRootPath, MaxTrustedRootSize)
	if err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	v, err := NewVerifiers(b, ids)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", trustedRootPath, err)
	}
	return v, nil
}

// VerifierFor checks keyless material against the archive's envelope env
// and returns the key it vouches for (see the package doc, "Verification",
// for the order of the checks). Every refusal is a *VerifyError.
func (v *Verifiers) VerifierFor(keyID string, env, mat []byte) (envelope.WitnessedKey, error) {
	if !strings.HasPrefix(keyID, envelope.KeylessPrefix) {
		return nil, refuse(MaterialMismatch, nil, "keyid %q is not a keyless key id", clip(keyID))
	}
	m, err := parseMaterial(mat)
	if err != nil {
		return nil, err
	}
	if err := m.sameEnvelope(keyID, env); err != nil {
		return nil, err
	}
	witnessed, err := v.witness(m)
	if err != nil {
		return nil, err
	}
	if err := v.checkCertificate(m, witnessed); err != nil {
		return nil, err
	}
	pub, ok := m.cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, refuse(CertificateInvalid, nil, "the certificate's key is not ECDSA P-256")
	}
	digest := sha256.Sum256(envelope.PAE(m.payloadType, m.payload))
	if !ecdsa.VerifyASN1(pub, digest[:], m.sig) {
		return nil, refuse(SignatureInvalid, nil, "the certificate's key does not verify the envelope's signature")
	}
	summary, err := v.decide(m)
	if err != nil {
		return nil, err
	}
	matched, err := matchIdentities(v.ids, m.cert, summary)
	if err != nil {
		return nil, err
	}
	return &witnessedKey{keyID: keyID, pub: pub, summary: summary, witnessed: witnessed[0], matched: matched}, nil
}

// witness verifies every tlog entry and RFC 3161 timestamp the material
// carries and returns the witnessed times, earliest first: at least one.
func (v *Verifiers) witness(m *material) ([]time.Time, error) {
	var times []time.Time
	entries, err := m.bundle.TlogEntries()
	if err != nil {
		return nil, refuse(TlogInvalid, err, "tlog entries")
	}
	if len(entries) > 0 {
		logs := map[string]bool{}
		for _, e := range entries {
			logs[e.LogKeyID()] = true
		}
		// sigstore-go skips an entry it cannot verify and counts logs, not
		// entries: with one entry per log, each must verify.
		if len(logs) != len(entries) {
			return nil, refuse(TlogInvalid, nil, "%d tlog entries of %d logs: at most one entry per log", len(entries), len(logs))
		}
		ts, err := verify.VerifyTlogEntry(m.bundle, v.trusted, len(logs), true)
		if err != nil {
			return nil, refuse(TlogInvalid, err, "tlog entry")
		}
		for _, t := range ts {
			times = append(times, t.Time)
		}
	}
	ts, errs, err := verify.VerifySignedTimestamp(m.bundle, v.trusted)
	if err == nil && len(errs) > 0 {
		err = errors.Join(errs...)
	}
	if err != nil {
		return nil, refuse(TimestampInvalid, err, "RFC 3161 timestamp")
	}
	for _, t := range ts {
		times = append(times, t.Time)
	}
	if len(times) == 0 {
		return nil, refuse(TimestampInvalid, nil, "no witnessed time: neither a verified RFC 3161 timestamp nor a tlog integrated time")
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times, nil
}

// checkCertificate requires the certificate to chain to a trusted Fulcio
// CA at every witnessed time. A witnessed time outside the certificate's
// own validity is TimestampInvalid; any other failure CertificateInvalid.
func (v *Verifiers) checkCertificate(m *material, witnessed []time.Time) error {
	c := m.cert
	for _, t := range witnessed {
		if t.Before(c.NotBefore) || t.After(c.NotAfter) {
			return refuse(TimestampInvalid, nil, "witnessed at %s, outside the certificate's validity [%s, %s]",
				t.UTC().Format(time.RFC3339), c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
		}
		if _, err := verify.VerifyLeafCertificate(t, c, v.trusted); err != nil {
			return refuse(CertificateInvalid, err, "no chain to a trusted Fulcio CA at %s", t.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// decide is sigstore-go's whole verification, the decision once the steps
// above have said which one fails: at least one observer timestamp, every
// tlog entry, the chain at every witnessed time, the DSSE signature.
func (v *Verifiers) decide(m *material) (*certificate.Summary, error) {
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if entries, _ := m.bundle.TlogEntries(); len(entries) > 0 {
		logs := map[string]bool{}
		for _, e := range entries {
			logs[e.LogKeyID()] = true
		}
		opts = append(opts, verify.WithTransparencyLog(len(logs)))
	}
	sv, err := verify.NewVerifier(v.trusted, opts...)
	if err != nil {
		return nil, refuse(Malformed, err, "sigstore-go verifier")
	}
	res, err := sv.Verify(m.bundle, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithoutIdentitiesUnsafe()))
	if err != nil {
		return nil, refuse(Malformed, err, "sigstore-go refused the bundle")
	}
	if res.Signature == nil || res.Signature.Certificate == nil {
		return nil, refuse(Malformed, nil, "sigstore-go verified no certificate")
	}
	return res.Signature.Certificate, nil
}

// witnessedKey is the key keyless material vouches for.
type witnessedKey struct {
	keyID     string
	pub       *ecdsa.PublicKey
	summary   *certificate.Summary
	witnessed time.Time
	matched   []*Identity
}

func (k *witnessedKey) KeyID() string { return k.keyID }

// Verify reports whether sig (ASN.1 DER ECDSA) is the certificate key's
// signature of message.
func (k *witnessedKey) Verify(message, sig []byte) bool {
	if len(sig) > envelope.MaxMaterialSignature {
		return false
	}
	d := sha256.Sum256(message)
	return ecdsa.VerifyASN1(k.pub, d[:], sig)
}

// WitnessedAt is the earliest verified witnessed time.
func (k *witnessedKey) WitnessedAt() time.Time { return k.witnessed }

// Signer is the certificate's SAN (for GitHub, the workflow at its ref).
func (k *witnessedKey) Signer() string { return k.summary.SubjectAlternativeName }

// CheckAt refuses a signed_at too far from the witnessed time
// (SigningTimeImplausible), an identity ("repo:OWNER/REPO") that is not
// the certificate's source repository (IdentityMismatch), and the matched
// identities' Valid at the witnessed time.
func (k *witnessedKey) CheckAt(signedAt time.Time, identity string) error {
	w := k.witnessed
	if signedAt.Before(w.Add(-MaxSigningDelay)) || signedAt.After(w.Add(maxClockSkew)) {
		return refuse(SigningTimeImplausible, nil, "signed_at %s is not within [witnessed-%s, witnessed+%s] of the witnessed time %s",
			signedAt.UTC().Format(time.RFC3339Nano), MaxSigningDelay, maxClockSkew, w.UTC().Format(time.RFC3339Nano))
	}
	if identity != "" {
		repo, ok := strings.CutPrefix(identity, "repo:")
		host, err := sanHost(k.summary)
		if !ok || err != nil || k.summary.SourceRepositoryURI != "https://"+host+"/"+repo {
			return refuse(IdentityMismatch, err, "the bundle is for %q, the certificate for source repository %q", clip(identity), clip(k.summary.SourceRepositoryURI))
		}
	}
	return k.CheckWitnessed(w)
}

// CheckWitnessed judges the matched identities at at. An identity with a
// lifecycle (Valid non-nil: a trust store's) decides over one without (the
// flags', the action's inputs): the certificate is refused when a matched
// identity is revoked at at, whatever else matches it (a revocation is a
// deny, issue 25 class 3), and when a matched lifecycle identity exists,
// one of those must be valid at at; identities without a lifecycle decide
// only a certificate no lifecycle identity matches.
func (k *witnessedKey) CheckWitnessed(at time.Time) error {
	var first error
	free, valid := false, false
	for _, id := range k.matched {
		if id.Valid == nil {
			free = true
			continue
		}
		err := id.Valid(at)
		if err == nil {
			valid = true
			continue
		}
		err = fmt.Errorf("%s: %w", id.label(), err)
		if revoked(err) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	if valid || (free && first == nil) {
		return nil
	}
	return first
}

// revoked reports whether err is a trust store's revocation.
func revoked(err error) bool {
	var ke *trust.KeyError
	return errors.As(err, &ke) && ke.Reason == trust.KeyRevoked
}
