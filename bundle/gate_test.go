package bundle

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/kernel/contract"
)

// The release gate's bindings: what a pull request cannot change must
// decide acceptance (issue 8, items 1, 2, 3 and 5).

func contractHashOf(t *testing.T, f *fixture, profile string) string {
	t.Helper()
	c, err := contract.Load(filepath.Join(f.repo, ".proofgate", "contract.yaml"), profile)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestGateContractBinding(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	good := export(t, f, k, ExportOptions{})
	base := contractHashOf(t, f, "")

	// A weaker copy of the contract: same checks, no approval required.
	weak := filepath.Join(t.TempDir(), "weak.yaml")
	b, _ := os.ReadFile(filepath.Join(f.repo, ".proofgate", "contract.yaml"))
	os.WriteFile(weak, bytes.Replace(b, []byte("approval: {required: 1}"), []byte("approval: {required: 0}"), 1), 0o644)
	wc, err := contract.Load(weak, "")
	if err != nil {
		t.Fatal(err)
	}
	weakHash, _ := wc.Hash()
	if weakHash == base {
		t.Fatal("the weak copy hashes like the contract")
	}

	for _, c := range []struct {
		name string
		hash string
		want Reason
	}{
		{"the contract it ran under", base, ""},
		{"another contract", weakHash, ContractMismatch},
		{"a profile of the same file", contractHashOf(t, f, "quick"), ContractMismatch},
	} {
		_, err := Verify(bytes.NewReader(good), st, VerifyOptions{Commit: f.commit, ContractHash: c.hash})
		if reasonOf(err) != c.want || (c.want == "") != (err == nil) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// A run under the quick profile is refused for the base contract's hash.
	q := makeRun(t, runOpts{approve: []string{"alice"}, profile: "quick"})
	qb := export(t, q, k, ExportOptions{})
	if _, err := Verify(bytes.NewReader(qb), st, VerifyOptions{Commit: q.commit, ContractHash: contractHashOf(t, q, "")}); reasonOf(err) != ContractMismatch {
		t.Errorf("quick run against the base contract: %v", err)
	}
	if _, err := Verify(bytes.NewReader(qb), st, VerifyOptions{Commit: q.commit, ContractHash: contractHashOf(t, q, "quick")}); err != nil {
		t.Errorf("quick run against the quick profile: %v", err)
	}
}

func TestGateDirtySource(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}, dirty: true})
	k := newKey(t)
	st := storeWith(t, k)
	b := export(t, f, k, ExportOptions{})
	for name, opts := range map[string]VerifyOptions{
		"commit": {Commit: f.commit, AnyContract: true},
		"tree":   {Tree: f.tree, AnyContract: true},
		"any":    anyRun,
	} {
		if _, err := Verify(bytes.NewReader(b), st, opts); reasonOf(err) != DirtySource {
			t.Errorf("dirty run, %s: got %v, want %s", name, err, DirtySource)
		}
	}
	opts := VerifyOptions{Commit: f.commit, AnyContract: true, AllowDirty: true}
	res, err := Verify(bytes.NewReader(b), st, opts)
	if err != nil {
		t.Fatalf("dirty run with AllowDirty: %v", err)
	}
	if !res.Run.Worktree.Dirty || !strings.HasPrefix(res.Run.Worktree.Digest, "sha256:") {
		t.Errorf("the verdict does not say the source was dirty: %+v", res.Run.Worktree)
	}
	// A clean run says so, with the digest it was planned on.
	clean := makeRun(t, runOpts{approve: []string{"alice"}})
	res, err = Verify(bytes.NewReader(export(t, clean, k, ExportOptions{})), st, VerifyOptions{Commit: clean.commit, AnyContract: true})
	if err != nil || res.Run.Worktree.Dirty || res.Run.Worktree.Digest == "" {
		t.Fatalf("clean run: %v %+v", err, res)
	}
	// The predicate cannot claim a clean tree for a dirty run.
	forged := repack(t, resign(t, files(t, b), k, func(s *Statement) { s.Predicate.Run.Worktree.Dirty = false }))
	if _, err := Verify(bytes.NewReader(forged), st, opts); reasonOf(err) != PredicateMismatch {
		t.Errorf("predicate claims clean: %v", err)
	}
}

func TestGateSigningTime(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	last := lastEventTime(t, f)
	st := storeWith(t, k)
	opts := VerifyOptions{Commit: f.commit, AnyContract: true}

	for _, c := range []struct {
		name     string
		signedAt time.Time
		opts     VerifyOptions
		want     Reason
	}{
		{"at the last event", last, opts, ""},
		{"a second before the last event", last.Add(-time.Second), opts, SigningTimeImplausible},
		{"a year before the run", last.AddDate(-1, 0, 0), opts, SigningTimeImplausible},
		{"four minutes ahead of now", time.Now().Add(4 * time.Minute), opts, ""},
		{"an hour ahead of now", time.Now().Add(time.Hour), opts, SigningTimeImplausible},
		{"after the verification time given", last.Add(time.Hour), withNow(opts, last.Add(time.Minute)), SigningTimeImplausible},
		{"after the witness", last.Add(time.Hour), withWitness(opts, last.Add(time.Minute)), SigningTimeImplausible},
		{"before the witness", last, withWitness(opts, last.Add(time.Hour)), ""},
	} {
		b := export(t, f, k, ExportOptions{SignedAt: c.signedAt})
		_, err := Verify(bytes.NewReader(b), st, c.opts)
		if reasonOf(err) != c.want || (c.want == "") != (err == nil) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// A leaked retired or revoked key signs with a backdated signed_at; the
// artifact's created_at (GitHub's time, not the signer's) refuses it.
func TestGateWitnessedKeyStatus(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	last := lastEventTime(t, f)
	b := export(t, f, k, ExportOptions{}) // signed_at = last
	retiredAt := last.Add(time.Minute)
	retired := storeWith(t, k)
	retired.Retire(k.s.ID, retiredAt)
	revoked := storeWith(t, k)
	revoked.Revoke(k.s.ID, &retiredAt)
	opts := VerifyOptions{Commit: f.commit, AnyContract: true}

	for _, c := range []struct {
		name    string
		store   *trust.Store
		witness time.Time
		want    Reason
	}{
		{"retired, no witness", retired, time.Time{}, ""},
		{"retired, artifact made before retirement", retired, last.Add(30 * time.Second), ""},
		{"retired, artifact made after retirement", retired, last.Add(time.Hour), KeyNotValid},
		{"revoked, artifact made before revocation", revoked, last.Add(30 * time.Second), ""},
		{"revoked, artifact made after revocation", revoked, last.Add(time.Hour), KeyRevoked},
		{"revoked, artifact made at revocation", revoked, retiredAt, KeyRevoked},
	} {
		_, err := Verify(bytes.NewReader(b), c.store, withWitness(opts, c.witness))
		if reasonOf(err) != c.want || (c.want == "") != (err == nil) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestGatePolicyMustBeExplicit(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	b := export(t, f, k, ExportOptions{})
	h := contractHashOf(t, f, "")
	for name, o := range map[string]VerifyOptions{
		"nothing":                {},
		"no source":              {ContractHash: h},
		"no contract":            {Commit: f.commit},
		"commit and tree":        {Commit: f.commit, Tree: f.tree, ContractHash: h},
		"commit and any source":  {Commit: f.commit, AnySource: true, ContractHash: h},
		"hash and any contract":  {Commit: f.commit, ContractHash: h, AnyContract: true},
		"short commit":           {Commit: f.commit[:12], ContractHash: h},
		"short tree":             {Tree: f.tree[:7], ContractHash: h},
		"commit with a newline":  {Commit: f.commit + "\n", ContractHash: h},
		"hash without algorithm": {Commit: f.commit, ContractHash: strings.TrimPrefix(h, "sha256:")},
		"hash upper case":        {Commit: f.commit, ContractHash: strings.ToUpper(h)},
	} {
		_, err := Verify(bytes.NewReader(b), st, o)
		var pe *PolicyError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want a policy error", name, err)
		}
		if strings.HasPrefix(name, "short") && !strings.Contains(err.Error(), "full 40-hex") {
			t.Errorf("%s: %v does not ask for the full SHA", name, err)
		}
	}
	if _, err := Verify(bytes.NewReader(b), st, VerifyOptions{Commit: f.commit, ContractHash: h}); err != nil {
		t.Fatalf("explicit policy: %v", err)
	}
}

func lastEventTime(t *testing.T, f *fixture) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.runDir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	i := strings.Index(lines[len(lines)-1], `"time":"`)
	s := lines[len(lines)-1][i+len(`"time":"`):]
	tm, err := time.Parse(time.RFC3339Nano, s[:strings.IndexByte(s, '"')])
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func withNow(o VerifyOptions, now time.Time) VerifyOptions { o.Now = now; return o }

func withWitness(o VerifyOptions, at time.Time) VerifyOptions { o.Witnessed = at; return o }
