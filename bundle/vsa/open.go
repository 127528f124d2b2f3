package vsa

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/exit"
)

// MaxPayload bounds the signed statement of a VSA.
const MaxPayload = 1 << 20

// Reason is the typed cause of a VSA Open or MatchArchive refused.
type Reason string

// Refusal reasons, in the order Open checks them.
const (
	Malformed        Reason = "malformed"         // not a DSSE envelope of a canonical ProofGate VSA
	UnknownKey       Reason = "unknown-key"       // no trusted key for its keyid
	SignatureInvalid Reason = "signature-invalid" // the key does not verify it
	KeyNotValid      Reason = "key-not-valid"     // the key may not sign at timeVerified, or for the policy's repository
	PolicyMismatch   Reason = "policy-mismatch"   // policy.digest is not the policy member's
	SubjectMismatch  Reason = "subject-mismatch"  // the archive is not the subject (MatchArchive)
	// SigningTimeImplausible: timeVerified is before the bundle the
	// summary names was signed (or witnessed), or ahead of the verifier's
	// clock: the key's status is not judged at a time its holder chose.
	SigningTimeImplausible Reason = "signing-time-implausible"
	// UnsafePolicy is a consumer's refusal of a summary that passed under
	// an unsafe opt-out (level PROOFGATE_VERIFIED_UNSAFE).
	UnsafePolicy Reason = "unsafe-policy"
)

// VerifyError is a VSA refused. It is of class exit.Refused.
type VerifyError struct {
	Reason Reason
	Detail string
	Err    error
}

func (e *VerifyError) Error() string { return fmt.Sprintf("vsa refused: %s: %s", e.Reason, e.Detail) }

// Unwrap returns the underlying error.
func (e *VerifyError) Unwrap() error { return e.Err }

// Is reports whether target is exit.Refused.
func (e *VerifyError) Is(target error) bool { return target == exit.Refused }

func refuse(r Reason, err error, format string, args ...any) error {
	return &VerifyError{Reason: r, Detail: fmt.Sprintf(format, args...), Err: err}
}

// Open verifies a VSA file written by Sign: the DSSE signature with a key
// of vs before the payload is read (envelope.Open); a payload at most
// MaxPayload bytes that strictly decodes (no unknown or duplicate member)
// and is the canonical JSON of what it decodes to; the type URIs; a
// result and levels this package writes; the policy document (policy,
// nil when not given; an earlier summary's member otherwise) against
// policy.digest; and the key's validity at timeVerified for the identity
// "repo:<policy repo>" ("" when the policy names no repository or is not
// known), so a gate key trusted for one repository vouches for no other
// (TrustedKey.CheckAt). Every refusal is a *VerifyError.
//
// timeVerified is judged before the key: it may not precede the policy's
// witness time (and an earlier summary's verdict times) by more than
// bundle.MaxClockSkew, nor lie more than that after the verifier's clock
// (SigningTimeImplausible). MatchEvidence holds it against the archive
// itself, whose signing time the summary's signer does not choose.
func Open(b []byte, vs envelope.Verifiers, policy []byte) (*Statement, envelope.TrustedKey, error) {
	return OpenAt(b, vs, policy, time.Now())
}

// OpenAt is Open with the verifier's clock at now.
func OpenAt(b []byte, vs envelope.Verifiers, policy []byte, now time.Time) (*Statement, envelope.TrustedKey, error) {
	one, fp, err := firstSignature(b)
	if err != nil {
		return nil, nil, err
	}
	payload, k, err := envelope.Open(one, PayloadType, "vsa", vs)
	if err != nil {
		return nil, nil, refusalOf(err)
	}
	if err := matchFingerprint(k, fp); err != nil {
		return nil, nil, err
	}
	st, at, err := decodeAt(payload, policy, now)
	if err != nil {
		return nil, nil, err
	}
	if err := checkKey(k, at, st); err != nil {
		return nil, nil, err
	}
	return st, k, nil
}

// checkKey applies the gate key's status at timeVerified and its
// identity: the repository the policy names.
func checkKey(k envelope.TrustedKey, at time.Time, st *Statement) error {
	identity, unknown := "", ""
	switch {
	case st.policy == nil:
		unknown = " (the summary's policy document, which names its repository, was not given)"
	case st.policy.Bundle.Repo != "":
		identity = "repo:" + st.policy.Bundle.Repo
	}
	if err := k.CheckAt(at, identity); err != nil {
		return refuse(KeyNotValid, err, "key %s at %s: %v%s", k.KeyID(), st.Predicate.TimeVerified, err, unknown)
	}
	return nil
}

// firstSignature returns the envelope with its first signature only, and
// the keyid of the second: a VSA holds one signature, or (ADR 0038) the
// same signature again under a keyid of the fingerprint form. Anything
// else is left to envelope.Open, which refuses it as malformed.
func firstSignature(b []byte) ([]byte, string, error) {
	var env envelope.Envelope
	if len(b) > envelope.MaxSize || strictjson.Decode(b, &env) != nil || len(env.Signatures) != 2 {
		return b, "", nil
	}
	second := env.Signatures[1]
	if second.Sig != env.Signatures[0].Sig || !fingerprintForm(second.KeyID) {
		return nil, "", refuse(Malformed, nil, "vsa: signatures[1] is not signatures[0] again under the key's SHA256: fingerprint")
	}
	env.Signatures = env.Signatures[:1]
	one, err := canon.Marshal(&env)
	if err != nil {
		return nil, "", refuse(Malformed, err, "vsa: %v", err)
	}
	return one, second.KeyID, nil
}

// fingerprintForm reports whether id is "SHA256:" and 43 characters of
// unpadded standard base64 (a SHA-256 hash).
func fingerprintForm(id string) bool {
	rest, ok := strings.CutPrefix(id, "SHA256:")
	if !ok || len(rest) != 43 {
		return false
	}
	_, err := base64.RawStdEncoding.Strict().DecodeString(rest)
	return err == nil
}

// matchFingerprint requires the second signature's keyid (fp, "" when
// there is none) to be the fingerprint of the key that verified the first.
func matchFingerprint(k envelope.TrustedKey, fp string) error {
	if fp == "" {
		return nil
	}
	pk, ok := k.(interface{ Public() ed25519.PublicKey })
	if !ok {
		return refuse(Malformed, nil, "vsa: key %s: its public key is not known to check signatures[1].keyid", k.KeyID())
	}
	want, err := Fingerprint(pk.Public())
	if err != nil || want != fp {
		return refuse(Malformed, err, "vsa: signatures[1].keyid %s is not the fingerprint of key %s (%s)", fp, k.KeyID(), want)
	}
	return nil
}

// decodeAt is decode, then timeVerified, judged plausible at now.
func decodeAt(payload, policy []byte, now time.Time) (*Statement, time.Time, error) {
	st, err := decode(payload, policy)
	if err != nil {
		return nil, time.Time{}, err
	}
	at, _ := time.Parse(time.RFC3339Nano, st.Predicate.TimeVerified)
	if err := st.plausible(at, now); err != nil {
		return nil, time.Time{}, err
	}
	return st, at, nil
}

// decode reads and checks the signed statement, and the policy document
// (nil: none given) against it.
func decode(payload, policy []byte) (*Statement, error) {
	if len(payload) > MaxPayload {
		return nil, refuse(Malformed, nil, "statement: %d bytes, more than %d", len(payload), MaxPayload)
	}
	var st Statement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, refuse(Malformed, err, "statement: %v", err)
	}
	if c, err := canon.Marshal(&st); err != nil || !bytes.Equal(c, payload) {
		return nil, refuse(Malformed, err, "statement: the payload is not the canonical JSON of the statement")
	}
	p := &st.Predicate
	if st.Type != StatementType || st.PredicateType != PredicateType {
		return nil, refuse(Malformed, nil, "statement: _type %q / predicateType %q", clip(st.Type), clip(st.PredicateType))
	}
	if _, err := time.Parse(time.RFC3339Nano, p.TimeVerified); err != nil {
		return nil, refuse(Malformed, err, "timeVerified %q is not RFC 3339", clip(p.TimeVerified))
	}
	if len(st.Subject) == 0 || !hex64(st.Subject[0].Digest["sha256"]) || len(st.Subject[0].Digest) != 1 {
		return nil, refuse(Malformed, nil, "subject[0] is not an archive with exactly {sha256: <64 hex>}")
	}
	if p.Policy.URI != PolicyURI || len(p.Policy.Digest) != 1 || !hex64(p.Policy.Digest["sha256"]) {
		return nil, refuse(Malformed, nil, "policy %s %v is not {uri: %s, digest: {sha256: <64 hex>}}", clip(p.Policy.URI), p.Policy.Digest, PolicyURI)
	}
	if err := st.readPolicy(policy); err != nil {
		return nil, err
	}
	if err := st.levelsAgree(); err != nil {
		return nil, err
	}
	return &st, nil
}

// readPolicy checks the policy document (the one given, then an earlier
// summary's member) against policy.digest and keeps it.
func (st *Statement) readPolicy(doc []byte) error {
	p := &st.Predicate
	if p.LegacyPolicy != nil {
		b, err := canon.Marshal(p.LegacyPolicy)
		if err != nil {
			return refuse(Malformed, err, "policy: %v", err)
		}
		if err := matchDigest(p, b, "the policy member"); err != nil {
			return err
		}
		st.policy = p.LegacyPolicy
	}
	if doc == nil {
		return nil
	}
	if err := matchDigest(p, doc, "the policy document given"); err != nil {
		return err
	}
	var pol Policy
	if err := strictjson.Decode(doc, &pol); err != nil {
		return refuse(Malformed, err, "policy document: %v", err)
	}
	if c, err := canon.Marshal(&pol); err != nil || !bytes.Equal(c, doc) {
		return refuse(Malformed, err, "policy document: not the canonical JSON of a policy")
	}
	st.policy = &pol
	return nil
}

// matchDigest refuses (PolicyMismatch) a policy document b whose sha256
// is not policy.digest.
func matchDigest(p *Predicate, b []byte, what string) error {
	sum := sha256.Sum256(b)
	if p.Policy.Digest["sha256"] != hex.EncodeToString(sum[:]) {
		return refuse(PolicyMismatch, nil, "policy.digest sha256 %s is not the digest of %s (sha256 %x)", p.Policy.Digest["sha256"], what, sum)
	}
	return nil
}

// levelsAgree refuses a result and levels this package does not write,
// or that disagree with the policy's unsafe opt-outs or an earlier
// summary's verdict.
func (st *Statement) levelsAgree() error {
	p := &st.Predicate
	res, levels := p.VerificationResult, p.VerifiedLevels
	ok := false
	for _, l := range []string{LevelVerified, LevelVerifiedUnsafe, LevelFailed} {
		want := Passed
		if l == LevelFailed {
			want = Failed
		}
		ok = ok || (res == want && slices.Equal(levels, []string{l}))
	}
	if ok && st.policy != nil && res == Passed {
		ok = (len(st.policy.Bundle.Unsafe) > 0) == (levels[0] == LevelVerifiedUnsafe)
	}
	if v := p.LegacyVerdict; ok && v != nil {
		ok = (v.Verdict == bundle.VerdictAccepted) == (res == Passed)
	}
	if !ok {
		return refuse(Malformed, nil, "verificationResult %q / verifiedLevels %q disagree with each other, the policy or the verdict",
			clip(res), levels)
	}
	return nil
}

// MatchArchive refuses (SubjectMismatch) a statement whose subject is not
// the archive with sha256 hex sum.
func (st *Statement) MatchArchive(sum string) error {
	if got := st.Subject[0].Digest["sha256"]; got != sum {
		return refuse(SubjectMismatch, nil, "the VSA is for archive %s (sha256 %s), not sha256 %s", clip(st.Subject[0].Name), got, clip(sum))
	}
	return nil
}

// Passed reports whether the VSA says the bundle passed.
func (st *Statement) Passed() bool {
	v := st.Predicate.LegacyVerdict
	return st.Predicate.VerificationResult == Passed && (v == nil || v.Verdict == bundle.VerdictAccepted)
}

func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// MatchEvidence is MatchArchive for archive a, and refuses
// (SigningTimeImplausible) a timeVerified before the archive's own
// bundle was signed: the signed_at of its attestation, which the
// summary's signer does not control.
func (st *Statement) MatchEvidence(a *Archive) error {
	if err := st.MatchArchive(a.SHA256); err != nil {
		return err
	}
	at, _ := time.Parse(time.RFC3339Nano, st.Predicate.TimeVerified)
	if !a.SignedAt.IsZero() && at.Before(a.SignedAt.Add(-bundle.MaxClockSkew)) {
		return refuse(SigningTimeImplausible, nil, "timeVerified %s is before the archive's bundle was signed (%s)",
			clip(st.Predicate.TimeVerified), a.SignedAt.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// plausible refuses a timeVerified (at) before the times the policy (and
// an earlier summary's verdict) carry of the bundle, or after now, beyond
// bundle.MaxClockSkew.
func (st *Statement) plausible(at, now time.Time) error {
	p := &st.Predicate
	if at.After(now.Add(bundle.MaxClockSkew)) {
		return refuse(SigningTimeImplausible, nil, "timeVerified %s is after the verifier's clock %s", p.TimeVerified, now.UTC().Format(time.RFC3339Nano))
	}
	type claim struct{ what, t string }
	var claims []claim
	if st.policy != nil {
		claims = append(claims, claim{"the policy's witnessed_at", st.policy.Bundle.WitnessedAt})
	}
	if v := p.LegacyVerdict; v != nil {
		claims = append(claims, claim{"the verdict's signed_at", v.SignedAt}, claim{"the verdict's witnessed_at", v.WitnessedAt})
	}
	for _, c := range claims {
		if c.t == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, c.t)
		if err != nil {
			return refuse(Malformed, err, "%s %q is not RFC 3339", c.what, clip(c.t))
		}
		if at.Before(t.Add(-bundle.MaxClockSkew)) {
			return refuse(SigningTimeImplausible, nil, "timeVerified %s is before %s %s", p.TimeVerified, c.what, c.t)
		}
	}
	return nil
}
