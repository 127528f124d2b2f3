package vsa_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	vsapb "github.com/in-toto/attestation/go/predicates/vsa/v1"
	itpb "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/keytest"
)

// verifiedAt is after the fixture bundle is signed (within the clock skew
// Open allows ahead of its own clock): a summary cannot predate the
// bundle it names.
var verifiedAt = time.Now().UTC().Truncate(time.Second).Add(2 * time.Minute)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// summarize verifies data under opts and returns the verdict's statement.
func summarize(t *testing.T, m *made, data []byte, opts bundle.VerifyOptions, tr ...vsa.Resource) *vsa.Statement {
	t.Helper()
	st, _ := summarizeDoc(t, m, data, opts, tr...)
	return st
}

// summarizeDoc is summarize and the summary's policy document.
func summarizeDoc(t *testing.T, m *made, data []byte, opts bundle.VerifyOptions, tr ...vsa.Resource) (*vsa.Statement, []byte) {
	t.Helper()
	p, err := opts.Policy()
	if err != nil {
		t.Fatal(err)
	}
	v, err := bundle.VerdictOf(bundle.Verify(bytes.NewReader(data), m.store, opts))
	if err != nil {
		t.Fatal(err)
	}
	a, err := vsa.Inspect(bytes.NewReader(data), archive.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	in := vsa.Input{Name: "b.tar.gz", Archive: a, Policy: p.Describe(), Trust: tr, Verdict: v, Time: verifiedAt}
	st, doc, err := vsa.Summarize(in)
	if err != nil {
		t.Fatal(err)
	}
	// The document Summarize returns is the one the digest names, as
	// New and PolicyDocument give them apart.
	alone, err := vsa.New(in)
	if err != nil || !reflect.DeepEqual(alone, st) {
		t.Fatalf("New differs from Summarize: %v", err)
	}
	if d, err := vsa.PolicyDocument(in); err != nil || !bytes.Equal(d, doc) {
		t.Fatalf("PolicyDocument differs from Summarize's document: %v", err)
	}
	if sum := sha256.Sum256(doc); hex.EncodeToString(sum[:]) != st.Predicate.Policy.Digest["sha256"] {
		t.Fatal("the policy document does not hash to the summary's policy digest")
	}
	return st, doc
}

// member returns an archive member's bytes, read with the standard
// library (not bundle/archive).
func member(t *testing.T, data []byte, name string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the archive: %v", name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func storeOf(t testing.TB, keys ...*keytest.Key) *trust.Store {
	s := trust.New()
	for _, k := range keys {
		if _, err := s.Add(k.PubPEM, "", nil, nil); err != nil {
			panic(err)
		}
	}
	return s
}

// reasonOf is the reason of a *vsa.VerifyError, or "".
func reasonOf(err error) vsa.Reason {
	var ve *vsa.VerifyError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return ""
}

// TestGoldenStructure pins the statement of an accepted bundle byte for
// byte, with every digest computed independently, and decodes it with the
// in-toto project's own Go types.
func TestGoldenStructure(t *testing.T) {
	m := bundleFixture(t)
	tr := vsa.TrustFile("trust.json", m.trustJSON)
	st, doc := summarizeDoc(t, m, m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, RequireApprovals: 1}, tr)
	gate := keytest.New(t)
	signed, err := vsa.Sign(context.Background(), gate.Signer, st)
	if err != nil {
		t.Fatal(err)
	}
	env, payload, err := envelope.Parse(firstOnly(t, signed), vsa.PayloadType, "vsa")
	if err != nil {
		t.Fatal(err)
	}
	if env.Signatures[0].KeyID != gate.Signer.KeyID() {
		t.Fatalf("keyid %s, want the gate's %s", env.Signatures[0].KeyID, gate.Signer.KeyID())
	}
	policy := fmt.Sprintf(`{"bundle":{"commit":"%s","contract_hash":"%s","require_approvals":1},"trust":[{"digest":{"sha256":"%s"},"name":"trust.json"}]}`,
		m.commit, m.contractHash, sum(m.trustJSON))
	if string(doc) != policy {
		t.Fatalf("policy document:\n got %s\nwant %s", doc, policy)
	}
	s := sum(m.archive)
	want := `{"_type":"https://in-toto.io/Statement/v1","predicate":{` +
		`"inputAttestations":[{"digest":{"sha256":"` + sum(member(t, m.archive, bundle.AttestationFile)) + `"},"uri":"attestation.dsse.json"}],` +
		`"policy":{"digest":{"sha256":"` + sum([]byte(policy)) + `"},"uri":"https://proofgate.dev/bundle-policy/v1"},` +
		`"resourceUri":"urn:proofgate:bundle:sha256:` + s + `","slsaVersion":"1.0","timeVerified":"` + verifiedAt.Format(time.RFC3339) + `",` +
		`"verificationResult":"PASSED","verifiedLevels":["PROOFGATE_VERIFIED"],"verifier":{"id":"https://proofgate.dev/verifier/bundle-verify/v1"}},` +
		`"predicateType":"https://slsa.dev/verification_summary/v1","subject":[` +
		`{"digest":{"sha256":"` + s + `"},"name":"b.tar.gz"},` +
		`{"digest":{"gitCommit":"` + m.commit + `"},"name":"source-commit"},` +
		`{"digest":{"gitTree":"` + m.tree + `"},"name":"source-tree"}]}`
	if string(payload) != want {
		t.Fatalf("statement:\n got %s\nwant %s", payload, want)
	}
	checkInToto(t, payload, s, verifiedAt)
}

// checkInToto decodes the payload with github.com/in-toto/attestation,
// and the predicate strictly under the VSA v1 protobuf schema: a member
// the schema does not define is refused (ADR 0041).
func checkInToto(t *testing.T, payload []byte, archiveSum string, at time.Time) {
	t.Helper()
	var st itpb.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	if err := st.Validate(); err != nil {
		t.Fatalf("in-toto Validate: %v", err)
	}
	if st.GetType() != itpb.StatementTypeUri || st.GetPredicateType() != vsa.PredicateType || st.GetSubject()[0].GetDigest()["sha256"] != archiveSum {
		t.Fatalf("in-toto statement %v", &st)
	}
	pj, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		t.Fatal(err)
	}
	var p vsapb.VerificationSummary
	if err := protojson.Unmarshal(pj, &p); err != nil {
		t.Fatalf("strict VSA v1 schema: %v", err)
	}
	if p.GetVerificationResult() != vsa.Passed || p.GetVerifiedLevels()[0] != vsa.LevelVerified || p.GetSlsaVersion() != "1.0" ||
		p.GetVerifier().GetId() != vsa.DefaultVerifierID || !p.GetTimeVerified().AsTime().Equal(at) ||
		p.GetPolicy().GetUri() != vsa.PolicyURI || len(p.GetInputAttestations()) != 1 || p.GetInputAttestations()[0].GetUri() != bundle.AttestationFile {
		t.Fatalf("in-toto VerificationSummary %v", &p)
	}
}

// TestRefusedIsFailed: a bundle refused (a policy naming another commit, a
// tampered archive) gives a FAILED summary that names only the archive
// and claims no level.
func TestRefusedIsFailed(t *testing.T) {
	m := bundleFixture(t)
	other := strings.Repeat("ab", 20)
	tampered := bytes.Clone(m.archive)
	tampered[len(tampered)/2] ^= 0x01
	for _, tc := range []struct {
		name string
		data []byte
		opts bundle.VerifyOptions
	}{
		{"other-commit", m.archive, bundle.VerifyOptions{Commit: other, ContractHash: m.contractHash}},
		{"other-contract", m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: "sha256:" + strings.Repeat("0", 64)}},
		{"tampered", tampered, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := summarize(t, m, tc.data, tc.opts)
			p := &st.Predicate
			if p.VerificationResult != vsa.Failed || len(p.VerifiedLevels) != 1 || p.VerifiedLevels[0] != vsa.LevelFailed {
				t.Fatalf("result %s levels %v, want FAILED [FAILED]", p.VerificationResult, p.VerifiedLevels)
			}
			if len(st.Subject) != 1 || st.Subject[0].Digest["sha256"] != sum(tc.data) {
				t.Fatalf("subjects %v, want only the archive %s", st.Subject, sum(tc.data))
			}
			if st.Passed() {
				t.Fatal("a FAILED statement says Passed")
			}
		})
	}
}

// TestSubjectIsTheArchive: the subject digest is the sha256 of the very
// bytes verified; MatchArchive refuses any other archive.
func TestSubjectIsTheArchive(t *testing.T) {
	m := bundleFixture(t)
	st := summarize(t, m, m.archive, bundle.VerifyOptions{AnySource: true, AnyContract: true})
	if got := st.Subject[0].Digest["sha256"]; got != sum(m.archive) {
		t.Fatalf("subject %s, want sha256 of the archive %s", got, sum(m.archive))
	}
	if err := st.MatchArchive(sum(m.archive)); err != nil {
		t.Fatal(err)
	}
	other := append(bytes.Clone(m.archive), 0)
	var ve *vsa.VerifyError
	if err := st.MatchArchive(sum(other)); !errors.As(err, &ve) || ve.Reason != vsa.SubjectMismatch {
		t.Fatalf("MatchArchive(other) = %v, want subject-mismatch", err)
	}
	h := vsa.NewHasher(bytes.NewReader(m.archive))
	if _, err := io.CopyN(io.Discard, h.Reader(), 100); err != nil {
		t.Fatal(err)
	}
	if got, n, err := h.Sum(); err != nil || got != sum(m.archive) || n != int64(len(m.archive)) {
		t.Fatalf("Hasher after a partial read = %s, %d, %v; want the whole archive's", got, n, err)
	}
}

// TestPolicyDigest: every change of requirement or of trust material
// changes policy.digest; the same policy gives the same digest.
func TestPolicyDigest(t *testing.T) {
	m := bundleFixture(t)
	base := bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, RequireApprovals: 1}
	quick := "quick"
	variants := map[string]bundle.VerifyOptions{"base": base}
	mod := func(name string, f func(o *bundle.VerifyOptions)) {
		o := base
		f(&o)
		variants[name] = o
	}
	mod("tree", func(o *bundle.VerifyOptions) { o.Commit, o.Tree = "", m.tree })
	mod("any-source", func(o *bundle.VerifyOptions) { o.Commit, o.AnySource = "", true })
	mod("any-contract", func(o *bundle.VerifyOptions) { o.ContractHash, o.AnyContract = "", true })
	mod("approvals", func(o *bundle.VerifyOptions) { o.RequireApprovals = 2 })
	mod("repo", func(o *bundle.VerifyOptions) { o.Repo = "acme/widget" })
	mod("profile", func(o *bundle.VerifyOptions) { o.Profile = &quick })
	mod("dirty", func(o *bundle.VerifyOptions) { o.AllowDirty = true })
	mod("witnessed", func(o *bundle.VerifyOptions) { o.Witnessed = verifiedAt })
	seen := map[string]string{}
	for name, o := range variants {
		d := summarize(t, m, m.archive, o).Predicate.Policy.Digest["sha256"]
		if prev, dup := seen[d]; dup {
			t.Errorf("policies %s and %s have the same digest", prev, name)
		}
		seen[d] = name
	}
	a := summarize(t, m, m.archive, base).Predicate.Policy.Digest["sha256"]
	if b := summarize(t, m, m.archive, base).Predicate.Policy.Digest["sha256"]; a != b {
		t.Fatalf("the same policy gives %s and %s", a, b)
	}
	t1 := summarize(t, m, m.archive, base, vsa.TrustFile("trust.json", m.trustJSON)).Predicate.Policy.Digest["sha256"]
	t2 := summarize(t, m, m.archive, base, vsa.TrustFile("trust.json", append(bytes.Clone(m.trustJSON), ' '))).Predicate.Policy.Digest["sha256"]
	if t1 == t2 || t1 == a {
		t.Fatal("another trust store does not change the policy digest")
	}
}

// TestPolicyDigestIdentities: keyless identity requirements are part of
// the policy digest.
func TestPolicyDigestIdentities(t *testing.T) {
	a := &vsa.Archive{SHA256: strings.Repeat("a", 64)}
	seen := map[string]bool{}
	for _, ids := range []map[string]string{nil, {"signer-workflow": "acme/widget/.github/workflows/ci.yml"},
		{"signer-workflow": "acme/widget/.github/workflows/ci.yml@refs/heads/main"}, {"source-repo": "acme/widget"}} {
		st, err := vsa.New(vsa.Input{Name: "b.tgz", Archive: a, Identities: ids, Verdict: bundle.Refusal("x", "", "")})
		if err != nil {
			t.Fatal(err)
		}
		d := st.Predicate.Policy.Digest["sha256"]
		if seen[d] {
			t.Fatalf("identities %v: a digest already seen", ids)
		}
		seen[d] = true
	}
}

// TestLevels: a policy that took an unsafe opt-out is not PROOFGATE_VERIFIED.
func TestLevels(t *testing.T) {
	m := bundleFixture(t)
	for _, tc := range []struct {
		opts bundle.VerifyOptions
		want string
	}{
		{bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash}, vsa.LevelVerified},
		{bundle.VerifyOptions{AnySource: true, ContractHash: m.contractHash}, vsa.LevelVerifiedUnsafe},
		{bundle.VerifyOptions{Commit: m.commit, AnyContract: true}, vsa.LevelVerifiedUnsafe},
		{bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, AllowDirty: true}, vsa.LevelVerifiedUnsafe},
	} {
		st := summarize(t, m, m.archive, tc.opts)
		if p := st.Predicate; p.VerificationResult != vsa.Passed || len(p.VerifiedLevels) != 1 || p.VerifiedLevels[0] != tc.want {
			t.Errorf("%+v: %s %v, want PASSED [%s]", tc.opts, p.VerificationResult, p.VerifiedLevels, tc.want)
		}
		for _, l := range st.Predicate.VerifiedLevels {
			if strings.HasPrefix(l, "SLSA_") {
				t.Errorf("level %s claims a SLSA level", l)
			}
		}
	}
}

// signedBy signs the accepted fixture's statement with gate.
func signedBy(t *testing.T, gate *keytest.Key) ([]byte, *vsa.Statement) {
	t.Helper()
	m := bundleFixture(t)
	st := summarize(t, m, m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash})
	b, err := vsa.Sign(context.Background(), gate.Signer, st)
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

// resign re-signs a modified payload with gate, as a forger holding the
// key but not this package would.
func resign(t *testing.T, gate *keytest.Key, payload []byte) []byte {
	t.Helper()
	b, err := envelope.Sign(gate.Signer, vsa.PayloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantReason(t *testing.T, err error, r vsa.Reason) {
	t.Helper()
	var ve *vsa.VerifyError
	if !errors.As(err, &ve) || ve.Reason != r {
		t.Fatalf("got %v, want a *vsa.VerifyError %s", err, r)
	}
}

// TestSignature: the VSA verifies with the gate's key only (not the
// bundle's, not another), through Open and through sigstore's independent
// DSSE verifier; a tampered one is refused.
func TestSignature(t *testing.T) {
	gate, other := keytest.New(t), keytest.New(t)
	b, st := signedBy(t, gate)
	got, k, err := vsa.Open(b, storeOf(t, gate), nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.KeyID() != gate.Signer.KeyID() || got.Subject[0].Digest["sha256"] != st.Subject[0].Digest["sha256"] || !got.Passed() {
		t.Fatalf("Open returned key %s, statement %+v", k.KeyID(), got)
	}
	_, k2, err := vsa.Open(b, storeOf(t, other), nil)
	wantReason(t, err, vsa.UnknownKey)
	if k2 != nil {
		t.Fatal("a refused Open returned a key")
	}
	_, _, err = vsa.Open(b, bundleFixture(t).store, nil) // the bundle's signer is not the gate
	wantReason(t, err, vsa.UnknownKey)

	env, _, err := envelope.Parse(firstOnly(t, b), vsa.PayloadType, "vsa")
	if err != nil {
		t.Fatal(err)
	}
	if err := envelope.Verify(env, gate.Signer.Public); err != nil {
		t.Fatalf("sigstore DSSE verify with the gate key: %v", err)
	}
	if err := envelope.Verify(env, other.Signer.Public); err == nil {
		t.Fatal("sigstore DSSE verify accepted another key")
	}
	// A payload changed after signing (PASSED for FAILED, same length).
	raw, _ := base64.StdEncoding.DecodeString(env.Payload)
	env.Payload = base64.StdEncoding.EncodeToString(bytes.Replace(raw, []byte(`"PASSED"`), []byte(`"FAILED"`), 1))
	forged, _ := json.Marshal(env)
	_, _, err = vsa.Open(forged, storeOf(t, gate), nil)
	wantReason(t, err, vsa.SignatureInvalid)
}

// TestOpenRefusesForgeries: payloads and policy documents the key holder
// signed or wrote but this package would never write are refused with
// their reasons.
func TestOpenRefusesForgeries(t *testing.T) {
	gate := keytest.New(t)
	store := storeOf(t, gate)
	m := bundleFixture(t)
	st, doc := summarizeDoc(t, m, m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash})
	good, _ := canon.Marshal(st)
	edit := func(f func(s *vsa.Statement)) []byte {
		c := *st
		c.Subject = append([]vsa.Resource(nil), st.Subject...)
		f(&c)
		b, err := canon.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var pol vsa.Policy
	if err := json.Unmarshal(doc, &pol); err != nil {
		t.Fatal(err)
	}
	// naming returns the statement re-pointed at document d, as a key
	// holder writing both would.
	naming := func(d []byte) []byte {
		return edit(func(s *vsa.Statement) { s.Predicate.Policy.Digest = map[string]string{"sha256": sum(d)} })
	}
	unsafeDoc, _ := canon.Marshal(vsa.Policy{Bundle: bundle.PolicyDescription{Commit: m.commit, ContractHash: m.contractHash, Unsafe: []string{bundle.UnsafeAnyContract}}})
	swapped := bytes.Replace(doc, []byte(`"bundle":{`), []byte(`"bundle":{"repo":"acme/widget",`), 1)
	spaced := append([]byte(" "), doc...)
	dup := bytes.Replace(doc, []byte(`{"bundle":`), []byte(`{"trust":[],"bundle":`), 1)
	for _, tc := range []struct {
		name         string
		payload, doc []byte
		want         vsa.Reason
	}{
		{"not-canonical", append([]byte(" "), good...), nil, vsa.Malformed},
		{"duplicate-member", bytes.Replace(good, []byte(`{"_type":"https://in-toto.io/Statement/v1",`), []byte(`{"_type":"https://in-toto.io/Statement/v1","_type":"x",`), 1), nil, vsa.Malformed},
		{"unknown-member", bytes.Replace(good, []byte(`"slsaVersion"`), []byte(`"extra":1,"slsaVersion"`), 1), nil, vsa.Malformed},
		{"other-predicate", edit(func(s *vsa.Statement) { s.PredicateType = "https://slsa.dev/verification_summary/v0.2" }), nil, vsa.Malformed},
		{"slsa-level", edit(func(s *vsa.Statement) { s.Predicate.VerifiedLevels = []string{"SLSA_BUILD_LEVEL_3"} }), nil, vsa.Malformed},
		{"passed-failed-level", edit(func(s *vsa.Statement) { s.Predicate.VerifiedLevels = []string{vsa.LevelFailed} }), nil, vsa.Malformed},
		{"failed-verified-level", edit(func(s *vsa.Statement) { s.Predicate.VerificationResult = vsa.Failed }), nil, vsa.Malformed},
		{"two-levels", edit(func(s *vsa.Statement) {
			s.Predicate.VerifiedLevels = []string{vsa.LevelVerified, vsa.LevelVerifiedUnsafe}
		}), nil, vsa.Malformed},
		{"other-policy-uri", edit(func(s *vsa.Statement) { s.Predicate.Policy.URI = "https://example.com/policy" }), nil, vsa.Malformed},
		{"policy-digest-not-hex", edit(func(s *vsa.Statement) { s.Predicate.Policy.Digest = map[string]string{"sha256": "x"} }), nil, vsa.Malformed},
		{"unsafe-hidden", naming(unsafeDoc), unsafeDoc, vsa.Malformed},
		{"policy-swapped", good, swapped, vsa.PolicyMismatch},
		{"policy-not-canonical", naming(spaced), spaced, vsa.Malformed},
		{"policy-duplicate-member", naming(dup), dup, vsa.Malformed},
		{"policy-not-json", naming([]byte("{")), []byte("{"), vsa.Malformed},
		{"no-subject", edit(func(s *vsa.Statement) { s.Subject = nil }), nil, vsa.Malformed},
		{"bad-time", edit(func(s *vsa.Statement) { s.Predicate.TimeVerified = "yesterday" }), nil, vsa.Malformed},
		{"oversize", bytes.Repeat([]byte(" "), vsa.MaxPayload+1), nil, vsa.Malformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := vsa.Open(resign(t, gate, tc.payload), store, tc.doc)
			wantReason(t, err, tc.want)
		})
	}
	for _, d := range [][]byte{nil, doc} {
		got, _, err := vsa.Open(resign(t, gate, good), store, d)
		if err != nil {
			t.Fatalf("the untouched payload, re-signed (document %v): %v", d != nil, err)
		}
		if (got.Policy() != nil) != (d != nil) || (d != nil && got.Policy().Bundle.Commit != m.commit) {
			t.Fatalf("Policy() = %+v with document %v", got.Policy(), d != nil)
		}
	}
}

// TestOpenKeyValidity: a gate key revoked before timeVerified is refused.
func TestOpenKeyValidity(t *testing.T) {
	gate := keytest.New(t)
	b, _ := signedBy(t, gate)
	store := storeOf(t, gate)
	at := verifiedAt.Add(-time.Hour)
	if err := store.Revoke(gate.Signer.KeyID(), &at); err != nil {
		t.Fatal(err)
	}
	_, _, err := vsa.Open(b, store, nil)
	wantReason(t, err, vsa.KeyNotValid)
}

// TestOpenKeyIdentity: a gate key trusted for one repository signs only
// summaries whose policy document (given beside the summary) required
// that repository; without the document the repository is unknown and
// the summary is refused. A key trusted without an identity needs none.
func TestOpenKeyIdentity(t *testing.T) {
	m := bundleFixture(t)
	gate := keytest.New(t)
	store := trust.New()
	if _, err := store.Add(gate.PubPEM, "repo:acme/widget", nil, nil); err != nil {
		t.Fatal(err)
	}
	for repo, ok := range map[string]bool{"acme/widget": true, "": false, "acme/other": false} {
		opts := bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, Repo: repo}
		st, doc := summarizeDoc(t, m, m.archive, opts)
		b, err := vsa.Sign(context.Background(), gate.Signer, st)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = vsa.Open(b, store, doc)
		if ok && err != nil {
			t.Fatalf("repo %q: %v", repo, err)
		}
		if !ok {
			wantReason(t, err, vsa.KeyNotValid)
		}
		_, _, err = vsa.Open(b, store, nil)
		wantReason(t, err, vsa.KeyNotValid)
		if !strings.Contains(err.Error(), "policy document") {
			t.Fatalf("repo %q without the document: %v does not say what is missing", repo, err)
		}
		if _, _, err := vsa.Open(b, storeOf(t, gate), nil); err != nil {
			t.Fatalf("repo %q, a key with no identity, no document: %v", repo, err)
		}
	}
}

// TestLegacySummary: a summary written before ADR 0041 (the policy and
// verdict as extension members, input attestations by name) still opens
// and is checked as it was: its policy member against policy.digest, its
// levels against its verdict, timeVerified against the verdict's time.
func TestLegacySummary(t *testing.T) {
	gate := keytest.New(t)
	store := storeOf(t, gate)
	m := bundleFixture(t)
	opts := bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, Repo: "acme/widget"}
	st, doc := summarizeDoc(t, m, m.archive, opts)
	v, err := bundle.VerdictOf(bundle.Verify(bytes.NewReader(m.archive), m.store, opts))
	if err != nil {
		t.Fatal(err)
	}
	legacy := func(f func(p *vsa.Predicate)) []byte {
		c := *st
		var pol vsa.Policy
		if err := json.Unmarshal(doc, &pol); err != nil {
			t.Fatal(err)
		}
		vv := v
		c.Predicate.LegacyPolicy, c.Predicate.LegacyVerdict = &pol, &vv
		c.Predicate.InputAttestations = nil
		for _, r := range st.Predicate.InputAttestations {
			c.Predicate.InputAttestations = append(c.Predicate.InputAttestations, vsa.Resource{Name: r.URI, Digest: r.Digest})
		}
		if f != nil {
			f(&c.Predicate)
		}
		b, err := canon.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		return resign(t, gate, b)
	}
	b := legacy(nil)
	got, _, err := vsa.Open(b, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Policy() == nil || got.Policy().Bundle.Repo != "acme/widget" || !got.Passed() {
		t.Fatalf("legacy summary read as policy %+v, passed %v", got.Policy(), got.Passed())
	}
	if _, _, err := vsa.Open(b, store, doc); err != nil {
		t.Fatalf("legacy summary with its document given too: %v", err)
	}
	_, _, err = vsa.Open(legacy(func(p *vsa.Predicate) { p.LegacyPolicy.Bundle.RequireApprovals = 3 }), store, nil)
	wantReason(t, err, vsa.PolicyMismatch)
	_, _, err = vsa.Open(legacy(func(p *vsa.Predicate) { *p.LegacyVerdict = bundle.Refusal("commit-mismatch", "x", "") }), store, nil)
	wantReason(t, err, vsa.Malformed)
	_, _, err = vsa.Open(legacy(func(p *vsa.Predicate) {
		p.LegacyVerdict.SignedAt = verifiedAt.Add(time.Hour).Format(time.RFC3339Nano)
	}), store, nil)
	wantReason(t, err, vsa.SigningTimeImplausible)
}

// TestDirtyNamesNoCommit: an accepted dirty run's VSA names no commit.
func TestDirtyNamesNoCommit(t *testing.T) {
	a := &vsa.Archive{SHA256: strings.Repeat("a", 64)}
	dirty := true
	v := bundle.Verdict{Verdict: bundle.VerdictAccepted, RunID: "r1", Dirty: &dirty, Commit: strings.Repeat("b", 40), Tree: strings.Repeat("c", 40)}
	pol := bundle.PolicyDescription{Unsafe: []string{bundle.UnsafeDirtySource}}
	st, err := vsa.New(vsa.Input{Name: "b.tgz", Archive: a, Policy: pol, Verdict: v})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Subject) != 1 || st.Predicate.VerifiedLevels[0] != vsa.LevelVerifiedUnsafe {
		t.Fatalf("subjects %v levels %v", st.Subject, st.Predicate.VerifiedLevels)
	}
}

// TestNewRefusesInput: New refuses what would make the VSA claim too much
// or name nothing.
func TestNewRefusesInput(t *testing.T) {
	a := &vsa.Archive{SHA256: strings.Repeat("a", 64)}
	clean := false
	ok := bundle.Verdict{Verdict: bundle.VerdictAccepted, RunID: "r1", Dirty: &clean, Commit: strings.Repeat("b", 40), Tree: strings.Repeat("c", 40)}
	for _, tc := range []struct {
		field string
		in    vsa.Input
	}{
		{"Archive", vsa.Input{Name: "b.tgz", Verdict: ok}},
		{"Archive", vsa.Input{Name: "b.tgz", Archive: &vsa.Archive{SHA256: "abc"}, Verdict: ok}},
		{"Name", vsa.Input{Name: "dir/b.tgz", Archive: a, Verdict: ok}},
		{"Name", vsa.Input{Name: "b\x1b[31m.tgz", Archive: a, Verdict: ok}},
		{"ResourceURI", vsa.Input{Name: "b.tgz", Archive: a, Verdict: ok, ResourceURI: "relative/path"}},
		{"VerifierID", vsa.Input{Name: "b.tgz", Archive: a, Verdict: ok, VerifierID: "not a uri"}},
		{"Verdict", vsa.Input{Name: "b.tgz", Archive: a, Verdict: bundle.Verdict{Verdict: bundle.VerdictRefused}}},
		{"Verdict", vsa.Input{Name: "b.tgz", Archive: a, Verdict: bundle.Verdict{Verdict: bundle.VerdictAccepted}}},
		{"Verdict", vsa.Input{Name: "b.tgz", Archive: a, Verdict: bundle.Verdict{Verdict: "maybe"}}},
		{"Trust[0]", vsa.Input{Name: "b.tgz", Archive: a, Verdict: ok, Trust: []vsa.Resource{{Name: "t"}}}},
		{"Identities", vsa.Input{Name: "b.tgz", Archive: a, Verdict: ok, Identities: map[string]string{"signer-workflow": "x\ny"}}},
	} {
		_, err := vsa.New(tc.in)
		var e *vsa.Error
		if !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("New(%+v) = %v, want a *vsa.Error on %s", tc.in, err, tc.field)
		}
	}
	if _, err := vsa.New(vsa.Input{Name: "b.tgz", Archive: a, Verdict: ok, ResourceURI: "https://github.com/acme/widget/actions/runs/1/artifacts/2"}); err != nil {
		t.Fatal(err)
	}
}

// TestInspectUnsafeArchive: an archive that does not read safely still has
// its digest, and no input attestations.
func TestInspectUnsafeArchive(t *testing.T) {
	junk := []byte("not a gzip stream at all")
	a, err := vsa.Inspect(bytes.NewReader(junk), archive.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if a.SHA256 != sum(junk) || a.Size != int64(len(junk)) || a.ReadErr == nil || a.Attestations != nil {
		t.Fatalf("Inspect(junk) = %+v", a)
	}
}
