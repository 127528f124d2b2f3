package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestRequireSandbox: a bundle whose one check ran as a host process is
// refused under WithRequireSandbox (and VerifyOptions.RequireSandbox) with
// unsandboxed-check naming the check and its runtime; without the
// requirement it is accepted and its verdict still lists the check.
func TestRequireSandbox(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	good := export(t, f, k, ExportOptions{})

	p, err := NewPolicy(WithCommit(f.commit), WithContractHash(contractHashOf(t, f, "")), WithRequireSandbox())
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewVerifier(st).Verify(bytes.NewReader(good), p)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Reason != UnsandboxedCheck {
		t.Fatalf("require sandbox: got %v, want %s", err, UnsandboxedCheck)
	}
	if want := "1 of 1 checks did not run in the docker sandbox: hello (runtime process)"; ve.Detail != want || ve.RunID != f.id {
		t.Fatalf("detail %q run %q, want %q run %q", ve.Detail, ve.RunID, want, f.id)
	}

	o := anyRun
	o.RequireSandbox = true
	v, err := VerdictOf(Verify(bytes.NewReader(good), st, o))
	if err != nil || v.Verdict != VerdictRefused || v.Reason != string(UnsandboxedCheck) {
		t.Fatalf("VerifyOptions.RequireSandbox: %+v, %v", v, err)
	}

	// Not required: accepted, and the verdict names the unsandboxed check.
	v, err = VerdictOf(Verify(bytes.NewReader(good), st, anyRun))
	if err != nil || v.Verdict != VerdictAccepted || !slices.Equal(v.Unsandboxed, []string{"hello"}) {
		t.Fatalf("not required: %+v, %v", v, err)
	}
	js, _ := json.Marshal(v)
	if !strings.Contains(string(js), `"unsandboxed":["hello"]`) {
		t.Fatalf("verdict JSON %s has no unsandboxed list", js)
	}
}

// TestUnsandboxed: only a docker attestation that says sandboxed counts;
// a process check, a docker one not sandboxed and one with no attestation
// are listed, in run order.
func TestUnsandboxed(t *testing.T) {
	s := RunSummary{Checks: []CheckSummary{
		{ID: "boxed", Runtime: &RuntimeSummary{Provider: "docker", Sandboxed: true}},
		{ID: "host", Runtime: &RuntimeSummary{Provider: "process"}},
		{ID: "unboxed", Runtime: &RuntimeSummary{Provider: "docker"}},
		{ID: "claims", Runtime: &RuntimeSummary{Provider: "process", Sandboxed: true}},
		{ID: "none"},
	}}
	if got := Unsandboxed(&s); !slices.Equal(got, []string{"host", "unboxed", "claims", "none"}) {
		t.Fatalf("Unsandboxed = %v", got)
	}
	p := &Policy{requireSandbox: true}
	err := p.checkSandbox(&s, "r")
	if reasonOf(err) != UnsandboxedCheck || !strings.Contains(err.Error(), "unboxed (runtime docker, not sandboxed), claims (runtime process), none (no runtime attestation)") {
		t.Fatalf("checkSandbox = %v", err)
	}
	if err := p.checkSandbox(&RunSummary{Checks: s.Checks[:1]}, "r"); err != nil {
		t.Fatalf("docker-only: %v", err)
	}
	if err := (&Policy{}).checkSandbox(&s, "r"); err != nil {
		t.Fatalf("not required: %v", err)
	}
}
