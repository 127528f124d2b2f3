package bundle

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/canon"
)

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerifyStatement: a keyless bundle's statement verifies without its
// archive (ADR 0040), the policy judged on the signed summary; what the
// statement alone cannot hide is refused, each for its reason.
func TestVerifyStatement(t *testing.T) {
	r := newKeylessRun(t, runOpts{approve: []string{"alice"}, produces: []string{"dist/app", "dist/tools/*"},
		script: "mkdir -p dist/tools && printf binary > dist/app && printf tool > dist/tools/x"})
	w := r.last.Add(time.Minute)
	s := r.ca.NewKeylessSigner(2, w)
	b, _ := r.export(t, s, ExportOptions{})
	env, material := member(t, b, AttestationFile), member(t, b, envelope.MaterialFile)
	mv := r.ca.Verifiers()
	verify := func(env, material []byte, opts ...PolicyOption) (*Result, error) {
		p, err := NewPolicy(WithCommit(r.f.commit), WithoutContractBindingUnsafe(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return NewVerifier(nil, WithMaterialVerifiers(mv), WithCurrentTime(w.Add(24*time.Hour))).VerifyStatement(env, material, p)
	}
	_, err := verify(env, material, WithApprovals(1), WithRepo("acme/widget"), WithSubject(hexSum("binary")), WithRequireSandbox())
	if err == nil || reasonOf(err) != UnsandboxedCheck {
		t.Fatalf("process checks under require-sandbox: %v", err)
	}
	res, err := verify(env, material, WithApprovals(1), WithRepo("acme/widget"), WithSubject(hexSum("binary")))
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdict()
	if !res.StatementOnly || !v.StatementOnly || res.Approvals != 1 || res.Signer != s.Signer || len(v.Products) != 2 || res.RunID != r.f.id {
		t.Fatalf("result %+v", res)
	}
	full, err := r.verify(b, nil, mv)
	if err != nil || full.StatementOnly || full.Verdict().StatementOnly {
		t.Fatalf("the archive's verification: %v, statement-only %v", err, full.StatementOnly)
	}

	resigned := func(mutate func(*Statement)) (env, material []byte) {
		fs := resignKeyless(t, files(t, b), s, mutate)
		return fileIn(fs, AttestationFile), fileIn(fs, envelope.MaterialFile)
	}
	addProduct := func(st *Statement) {
		st.Subject = append(st.Subject, Subject{Name: "products/hello/dist/evil", Digest: map[string]string{"sha256": hexSum("evil")}})
	}
	notComplete := func(st *Statement) { st.Predicate.Run.State = "AWAITING_APPROVAL" }
	noRunJSON := func(st *Statement) {
		for i, sub := range st.Subject {
			if sub.Name == RunFile {
				st.Subject = append(st.Subject[:i], st.Subject[i+1:]...)
				return
			}
		}
	}
	other := mustExport(t, r, r.ca.NewKeylessSigner(3, w))
	otherEnv, otherMat := member(t, other, AttestationFile), member(t, other, envelope.MaterialFile)
	k := newKey(t)
	keyEnv := member(t, export(t, r.f, k, ExportOptions{}), AttestationFile)
	var e envelope.Envelope
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	e.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(mustDecode(t, e.Payload)), `"COMPLETE"`, `"BLOCKED"`, 1)))
	tamperedEnv, _ := canon.Marshal(&e)
	addEnv, addMat := resigned(addProduct)
	incEnv, incMat := resigned(notComplete)
	noRunEnv, noRunMat := resigned(noRunJSON)
	for _, c := range []struct {
		name          string
		env, material []byte
		opts          []PolicyOption
		reason        Reason
	}{
		{"another product subject", addEnv, addMat, nil, SubjectMismatch},
		{"a run not complete", incEnv, incMat, nil, NotComplete},
		{"run.json not a subject", noRunEnv, noRunMat, nil, MissingFile},
		{"the envelope of another signature", otherEnv, material, nil, MaterialMismatch},
		{"a key-signed envelope", keyEnv, material, nil, UnknownKey},
		{"a payload changed after signing", tamperedEnv, material, nil, MaterialMismatch},
		{"a file the run did not produce", env, material, []PolicyOption{WithSubject(hexSum("binarY"))}, NotAProduct},
		{"two approvals required", env, material, []PolicyOption{WithApprovals(2)}, InsufficientApprovals},
		{"another repository", env, material, []PolicyOption{WithRepo("acme/other")}, RepoMismatch},
	} {
		if _, err := verify(c.env, c.material, c.opts...); reasonOf(err) != c.reason {
			t.Errorf("%s: %v, want %s", c.name, err, c.reason)
		}
	}
	// Another signer's statement of the same run, under its own material,
	// is a statement of that run: the policy, not the pair, decides.
	if _, err := verify(otherEnv, otherMat); err != nil {
		t.Errorf("another signer's own statement: %v", err)
	}
	p, _ := NewPolicy(WithCommit(strings.Repeat("ab", 20)), WithoutContractBindingUnsafe())
	if _, err := NewVerifier(nil, WithMaterialVerifiers(mv), WithCurrentTime(w.Add(24*time.Hour))).VerifyStatement(env, material, p); reasonOf(err) != CommitMismatch {
		t.Errorf("another commit: %v", err)
	}
	if reasonOf(mustRefuseWithout(t, env, material, r, w)) != UnknownKey {
		t.Error("a statement verified without material verifiers")
	}
}

func fileIn(fs []archive.File, name string) []byte {
	for _, f := range fs {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

func mustExport(t *testing.T, r *keylessRun, s envelope.MaterialSigner) []byte {
	t.Helper()
	b, _ := r.export(t, s, ExportOptions{})
	return b
}

// mustRefuseWithout verifies with no material verifiers (no trusted root).
func mustRefuseWithout(t *testing.T, env, material []byte, r *keylessRun, w time.Time) error {
	t.Helper()
	p, _ := NewPolicy(WithCommit(r.f.commit), WithoutContractBindingUnsafe())
	_, err := NewVerifier(nil, WithCurrentTime(w.Add(24*time.Hour))).VerifyStatement(env, material, p)
	return err
}
