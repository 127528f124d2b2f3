// Package vsa writes and reads the SLSA Verification Summary Attestation
// (https://slsa.dev/spec/v1.0/verification_summary) of a bundle
// verification: a signed statement, for a deploy gate downstream, that a
// named bundle archive was verified against a named policy, and with what
// verdict.
//
// # Wire format
//
// A VSA file is a DSSE envelope (bundle/envelope: canonical JSON, one
// Ed25519 signature whose keyid is the signing key's id, then the same
// signature again under the keyid "SHA256:<unpadded base64>", the key's
// SSH SHA-256 fingerprint, which slsa-verifier verify-vsa looks for; a
// file with the first entry only, as written before ADR 0038, reads the
// same) with payload type
// "application/vnd.in-toto+json". It is signed by the gate's key (the
// verifier's), never by the bundle's signer. The payload is the RFC 8785
// canonical JSON (internal/canon) of an in-toto Statement v1:
//
//	{
//	  "_type": "https://in-toto.io/Statement/v1",
//	  "subject": [
//	    {"name": "<archive file name>", "digest": {"sha256": "<hex of the archive's bytes>"}},
//	    {"name": "source-commit", "digest": {"gitCommit": "<run's source commit>"}},  // PASSED, clean source only
//	    {"name": "source-tree", "digest": {"gitTree": "<run's source tree>"}}         // PASSED, clean source only
//	  ],
//	  "predicateType": "https://slsa.dev/verification_summary/v1",
//	  "predicate": {
//	    "verifier": {"id": "<URI; default https://proofgate.dev/verifier/bundle-verify/v1>"},
//	    "timeVerified": "<RFC 3339, UTC>",
//	    "resourceUri": "<URI of the bundle; default urn:proofgate:bundle:sha256:<hex>>",
//	    "policy": {"uri": "https://proofgate.dev/bundle-policy/v1", "digest": {"sha256": "<hex>"}},
//	    "inputAttestations": [{"uri": "attestation.dsse.json", "digest": {"sha256": "<hex>"}}, …],
//	    "verificationResult": "PASSED" | "FAILED",
//	    "verifiedLevels": ["PROOFGATE_VERIFIED"] | ["PROOFGATE_VERIFIED_UNSAFE"] | ["FAILED"],
//	    "slsaVersion": "1.0"
//	  }
//	}
//
// The subject is always the archive exactly as verified: the sha256 of
// its bytes. Only when the verdict is accepted and the run was planned on a
// clean work tree does the statement also name the run's source commit
// and tree (in-toto DigestSet gitCommit and gitTree), so a deploy gate can
// look the VSA up by commit; a dirty run's checks ran on content no commit
// names, and a refused bundle's contents are not trusted.
//
// The predicate holds the members of the in-toto VSA v1 protobuf schema
// and no others, so a strict parse of it accepts it (ADR 0041).
//
// policy.digest is the sha256 of the policy document (PolicyDocument), a
// file of its own written beside the summary, its bytes the canonical JSON
// of Policy: {"bundle": <bundle.PolicyDescription>, "identities": {…},
// "trust": [<resource>, …]}, the bundle.PolicyDescription the verifier applied
// (source, contract, repository, profile, approvals, witness time, the
// unsafe opt-outs taken, the sandbox, rule and authorization requirements:
// every requirement, see PolicyDescription), the keyless identity requirements it was given
// (issuer, signer workflow, source repository and ref), and the digests of
// the trust material it trusted (trust.json, a Sigstore trusted root). Any change of requirement or of
// trusted keys changes the digest; a consumer given the document
// recomputes it (Open).
//
// inputAttestations are the signed members of the archive the verifier
// read (attestation.dsse.json, attestation.sigstore.json,
// checkpoint.dsse.json), each by its file name as a URI reference
// relative to resourceUri, and sha256; absent when the archive could not
// be read.
//
// verifiedLevels uses ProofGate's own track (the spec allows custom
// values that do not start with "SLSA_"; ProofGate claims no SLSA build
// level): PROOFGATE_VERIFIED when the bundle was accepted under a policy
// that bound the source and the contract and took no unsafe opt-out,
// PROOFGATE_VERIFIED_UNSAFE when it was accepted under one that took any
// (any-source, any-contract, dirty-source), FAILED when refused.
// dependencyLevels is not written.
//
// The verdict (a refusal's reason, the run and approvals accepted) is not
// in the summary: the schema has no field for it; `proofgate bundle
// verify --json` prints it.
//
// A summary written before ADR 0041 carries the policy document and the
// verdict in the predicate as the extension members PolicyField and
// VerdictField and names input attestations by "name"; Open reads it and
// checks those members as it did.
package vsa

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/strictjson"
	"golang.org/x/crypto/ssh"
)

// Type URIs and fixed values of the format.
const (
	PayloadType   = "application/vnd.in-toto+json"
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://slsa.dev/verification_summary/v1"
	SLSAVersion   = "1.0"

	// DefaultVerifierID is verifier.id unless Input.VerifierID names another.
	DefaultVerifierID = "https://proofgate.dev/verifier/bundle-verify/v1"
	// PolicyURI is policy.uri: the format of the policy extension member,
	// whose instance policy.digest names.
	PolicyURI = "https://proofgate.dev/bundle-policy/v1"
	// PolicyField and VerdictField name the extension members of a
	// summary written before ADR 0041, read and never written.
	PolicyField  = "https://proofgate.dev/vsa/policy/v1"
	VerdictField = "https://proofgate.dev/vsa/verdict/v1"
	// ResourcePrefix starts the default resourceUri, followed by the
	// archive's sha256 hex.
	ResourcePrefix = "urn:proofgate:bundle:sha256:"
)

// Verification results and levels.
const (
	Passed = "PASSED"
	Failed = "FAILED"

	LevelVerified       = "PROOFGATE_VERIFIED"
	LevelVerifiedUnsafe = "PROOFGATE_VERIFIED_UNSAFE"
	LevelFailed         = "FAILED"
)

// Names of the source subjects.
const (
	SubjectCommit = "source-commit"
	SubjectTree   = "source-tree"
)

// Statement is the in-toto Statement v1 a VSA file signs.
type Statement struct {
	Type          string     `json:"_type"`
	Subject       []Resource `json:"subject"`
	PredicateType string     `json:"predicateType"`
	Predicate     Predicate  `json:"predicate"`

	policy *Policy // what Open verified policy.digest against; nil when unknown
}

// Policy returns the policy document Open verified policy.digest against
// (given, or the member of an earlier summary); nil when it had none.
func (st *Statement) Policy() *Policy { return st.policy }

// Resource is an in-toto ResourceDescriptor (the members ProofGate uses).
type Resource struct {
	Name   string            `json:"name,omitempty"`
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest,omitempty"`
}

// Predicate is the verification summary (PredicateType): the VSA v1
// schema's members, and the extension members of an earlier summary.
type Predicate struct {
	Verifier           Verifier   `json:"verifier"`
	TimeVerified       string     `json:"timeVerified"`
	ResourceURI        string     `json:"resourceUri"`
	Policy             Resource   `json:"policy"`
	InputAttestations  []Resource `json:"inputAttestations,omitempty"`
	VerificationResult string     `json:"verificationResult"`
	VerifiedLevels     []string   `json:"verifiedLevels"`
	SLSAVersion        string     `json:"slsaVersion"`
	// LegacyPolicy and LegacyVerdict are read from a summary written
	// before ADR 0041 and never written.
	LegacyPolicy  *Policy         `json:"https://proofgate.dev/vsa/policy/v1,omitempty"`
	LegacyVerdict *bundle.Verdict `json:"https://proofgate.dev/vsa/verdict/v1,omitempty"`
}

// Verifier identifies who verified.
type Verifier struct {
	ID string `json:"id"`
}

// Policy is the policy document: what the verifier required and which
// trust material it trusted. policy.digest is its canonical JSON's
// sha256.
type Policy struct {
	Bundle bundle.PolicyDescription `json:"bundle"`
	// Identities are the keyless identity policies the verifier was
	// given beside its trust material (docs/adr/0010), as flag or input
	// name -> value, e.g. {"signer-workflow": "acme/widget/.github/workflows/ci.yml"}.
	Identities map[string]string `json:"identities,omitempty"`
	Trust      []Resource        `json:"trust,omitempty"`
}

// Input is what New summarises.
type Input struct {
	// Name is the archive's file name (the subject's name), without
	// directories.
	Name string
	// Archive is the archive as verified (Inspect).
	Archive *Archive
	// ResourceURI is resourceUri; "" is ResourcePrefix + the archive's
	// sha256.
	ResourceURI string
	// VerifierID is verifier.id; "" is DefaultVerifierID.
	VerifierID string
	// Policy is what the verifier required.
	Policy bundle.PolicyDescription
	// Identities are keyless identity requirements (Policy.Identities).
	Identities map[string]string
	// Trust names the trust material (name and sha256), e.g. TrustFile.
	Trust []Resource
	// Verdict is the verification's verdict (bundle.VerdictOf).
	Verdict bundle.Verdict
	// Time is timeVerified; zero is time.Now().
	Time time.Time
}

// Error is an Input New refuses, or a VSA Open refuses.
type Error struct {
	Field  string // the input field, or the VSA member
	Detail string
	Err    error
}

func (e *Error) Error() string { return "vsa: " + e.Field + ": " + e.Detail }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// PolicyDocument returns the policy document of in: the canonical JSON
// whose sha256 the summary's policy.digest is, to be written beside it.
func PolicyDocument(in Input) ([]byte, error) {
	pol := Policy{Bundle: in.Policy, Identities: in.Identities, Trust: in.Trust}
	b, err := canon.Marshal(&pol)
	if err != nil {
		return nil, &Error{Field: "Policy", Detail: err.Error(), Err: err}
	}
	return b, nil
}

// New returns the VSA statement of in.
func New(in Input) (*Statement, error) {
	st, _, err := Summarize(in)
	return st, err
}

// Summarize returns the VSA statement of in and its policy document: the
// bytes whose sha256 the statement's policy digest is, to be written
// beside it.
func Summarize(in Input) (*Statement, []byte, error) {
	if err := in.check(); err != nil {
		return nil, nil, err
	}
	polJSON, err := PolicyDocument(in)
	if err != nil {
		return nil, nil, err
	}
	polSum := sha256.Sum256(polJSON)
	at := in.Time
	if at.IsZero() {
		at = time.Now()
	}
	p := Predicate{
		Verifier:          Verifier{ID: orDefault(in.VerifierID, DefaultVerifierID)},
		TimeVerified:      at.UTC().Format(time.RFC3339Nano),
		ResourceURI:       orDefault(in.ResourceURI, ResourcePrefix+in.Archive.SHA256),
		Policy:            Resource{URI: PolicyURI, Digest: map[string]string{"sha256": hex.EncodeToString(polSum[:])}},
		InputAttestations: in.Archive.Attestations,
		SLSAVersion:       SLSAVersion,
	}
	p.VerificationResult, p.VerifiedLevels = result(&in.Verdict, &in.Policy)
	st := &Statement{Type: StatementType, PredicateType: PredicateType, Predicate: p,
		Subject: []Resource{{Name: in.Name, Digest: map[string]string{"sha256": in.Archive.SHA256}}}}
	if v := &in.Verdict; v.Verdict == bundle.VerdictAccepted && v.Dirty != nil && !*v.Dirty {
		st.Subject = append(st.Subject,
			Resource{Name: SubjectCommit, Digest: map[string]string{"gitCommit": strings.ToLower(v.Commit)}},
			Resource{Name: SubjectTree, Digest: map[string]string{"gitTree": strings.ToLower(v.Tree)}})
	}
	return st, polJSON, nil
}

// result is the verification result and the verified levels of v under p.
func result(v *bundle.Verdict, p *bundle.PolicyDescription) (string, []string) {
	switch {
	case v.Verdict != bundle.VerdictAccepted:
		return Failed, []string{LevelFailed}
	case len(p.Unsafe) > 0:
		return Passed, []string{LevelVerifiedUnsafe}
	}
	return Passed, []string{LevelVerified}
}

// check refuses an input that would make a VSA claim what it cannot.
func (in *Input) check() error {
	bad := func(field, detail string) error { return &Error{Field: field, Detail: detail} }
	switch {
	case in.Archive == nil || !hex64(in.Archive.SHA256):
		return bad("Archive", "no archive digest (use Inspect)")
	case in.Name == "" || strings.ContainsAny(in.Name, `/\`) || printable.Check("name", in.Name) != nil:
		return bad("Name", fmt.Sprintf("%q is not a file name", printable.Escape(in.Name)))
	case in.ResourceURI != "" && !absURI(in.ResourceURI):
		return bad("ResourceURI", fmt.Sprintf("%q is not an absolute URI", printable.Escape(in.ResourceURI)))
	case in.VerifierID != "" && !absURI(in.VerifierID):
		return bad("VerifierID", fmt.Sprintf("%q is not an absolute URI", printable.Escape(in.VerifierID)))
	}
	v := &in.Verdict
	switch v.Verdict {
	case bundle.VerdictRefused:
		if v.Reason == "" {
			return bad("Verdict", "a refusal without a reason")
		}
	case bundle.VerdictAccepted:
		if v.Reason != "" || v.RunID == "" || v.Dirty == nil || (!*v.Dirty && (!gitSHA(v.Commit) || !gitSHA(v.Tree))) {
			return bad("Verdict", "an acceptance without its run, source and work-tree state")
		}
	default:
		return bad("Verdict", fmt.Sprintf("verdict %q is neither accepted nor refused", printable.Escape(v.Verdict)))
	}
	for k, v := range in.Identities {
		if k == "" || printable.Check("identity", k) != nil || printable.Check("identity", v) != nil {
			return bad("Identities", fmt.Sprintf("%q: %q is not printable text", printable.Escape(k), printable.Escape(v)))
		}
	}
	for i, t := range in.Trust {
		if t.Name == "" || len(t.Digest) != 1 || !hex64(t.Digest["sha256"]) {
			return bad(fmt.Sprintf("Trust[%d]", i), "want a name and exactly {sha256: <64 hex>}")
		}
	}
	return nil
}

// Signer is the gate's key: it signs, and Sign names it by its public key
// too (Fingerprint).
type Signer interface {
	envelope.Signer
	PublicKey() ed25519.PublicKey
}

// Sign signs st with the gate's key s and returns the VSA file's bytes:
// the envelope carries the one signature twice, under the key's id (what
// Open looks the key up by) and then under its Fingerprint (the keyid
// securesystemslib derives for a key given without one, which
// slsa-verifier verify-vsa matches; ADR 0038).
func Sign(ctx context.Context, s Signer, st *Statement) ([]byte, error) {
	payload, err := canon.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("vsa: %w", err)
	}
	if len(payload) > MaxPayload {
		return nil, &Error{Field: "statement", Detail: fmt.Sprintf("%d bytes, more than %d", len(payload), MaxPayload)}
	}
	fp, err := Fingerprint(s.PublicKey())
	if err != nil {
		return nil, fmt.Errorf("vsa: %w", err)
	}
	b, err := envelope.SignContext(ctx, s, PayloadType, payload)
	if err != nil {
		return nil, err
	}
	var env envelope.Envelope // SignContext's own canonical output
	if err := strictjson.Decode(b, &env); err != nil {
		return nil, fmt.Errorf("vsa: %w", err)
	}
	env.Signatures = append(env.Signatures, envelope.Signature{KeyID: fp, Sig: env.Signatures[0].Sig})
	return canon.Marshal(&env)
}

// Fingerprint is the SSH SHA-256 fingerprint of pub ("SHA256:" and the
// unpadded base64 of the hash of its SSH wire form): the keyid
// securesystemslib's DSSE verifier derives for a key it is given without
// an id.
func Fingerprint(pub ed25519.PublicKey) (string, error) {
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	return ssh.FingerprintSHA256(k), nil
}

// TrustFile names trust material for Input.Trust: name and the sha256 of
// its bytes.
func TrustFile(name string, b []byte) Resource {
	sum := sha256.Sum256(b)
	return Resource{Name: name, Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func absURI(s string) bool {
	if len(s) > 2048 || printable.Check("uri", s) != nil || strings.ContainsAny(s, " \t") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && (u.Opaque != "" || u.Host != "" || u.Path != "")
}

func hex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func gitSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
