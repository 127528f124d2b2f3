package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const authContract = `version: 1
name: authorize
defaults: {runtime: process, timeout: 30s}
checks:
  - {id: flag, run: [grep, -q, fixed, flag.txt]}
approval: {required: 1}
%s`

// authRepo is a repository whose one run is AWAITING_APPROVAL; required
// adds authorization: {required: true} to its contract.
func authRepo(t *testing.T, required bool) (pg, string) {
	t.Helper()
	extra := ""
	if required {
		extra = "authorization: {required: true}\n"
	}
	p := pg{t: t, dir: filepath.Join(t.TempDir(), "repo")}
	p.write(".proofgate/contract.yaml", fmt.Sprintf(authContract, extra))
	p.write(".gitignore", ".proofgate/runs/\n")
	p.write("flag.txt", "fixed\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	p.must([]int{3}, "run", "--quiet")
	return p, p.runs()[0]
}

type runJSON struct {
	State          string `json:"state"`
	Authorizations []struct {
		Decision, Target, Actor string
	} `json:"authorizations"`
}

func (p pg) runJSON(args ...string) runJSON {
	p.t.Helper()
	r := p.must([]int{0}, args...)
	var out runJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		p.t.Fatalf("%v: %v\n%s", args, err, r.stdout)
	}
	return out
}

// verifyJSON verifies a bundle of run id requiring targets and returns the
// verdict and reason.
func (p pg) verifyAuth(bundlePath, keys string, targets ...string) (int, string) {
	p.t.Helper()
	head, err := exec.Command("git", "-C", p.dir, "rev-parse", "HEAD").Output()
	if err != nil {
		p.t.Fatal(err)
	}
	args := []string{"bundle", "verify", bundlePath, "--trust", filepath.Join(keys, "trust.json"),
		"--commit", strings.TrimSpace(string(head)), "--contract", ".proofgate/contract.yaml", "--json"}
	for _, t := range targets {
		args = append(args, "--require-authorization", t)
	}
	r := p.run("", args...)
	var v struct{ Verdict, Reason string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		p.t.Fatalf("verify: %v\n%s%s", err, r.stdout, r.stderr)
	}
	return r.code, v.Reason
}

func (p pg) exportBundle(id, keys string) string {
	p.t.Helper()
	out := filepath.Join(p.t.TempDir(), "b.tar.gz")
	p.must([]int{0}, "bundle", "export", id, "--key", filepath.Join(keys, "key.pem"), "-o", out)
	return out
}

// The required authorization holds the run after its approval; authorizing
// completes it; the bundle carries it and the gate requires it by target.
func TestAuthorizeRequiredThroughTheGate(t *testing.T) {
	k := keys(t)
	p, id := authRepo(t, true)
	if r := p.must([]int{0}, "approve", id, "--actor", "alice"); !strings.Contains(r.stdout, "AWAITING_APPROVAL") || !strings.Contains(r.stdout, "proofgate authorize "+id) {
		t.Fatalf("approved, authorization required: %s", r.stdout)
	}
	// Not COMPLETE: nothing exports.
	p.must([]int{1}, "bundle", "export", id, "--key", filepath.Join(k, "key.pem"), "-o", filepath.Join(t.TempDir(), "x.tar.gz"))
	rej := p.runJSON("authorize", id, "--target", "jira:OPS-1", "--actor", "bob", "--reject", "--reason", "not this ticket", "--json")
	if rej.State != "AWAITING_APPROVAL" {
		t.Fatalf("a rejected authorization moved the run: %s", rej.State)
	}
	st := p.runJSON("authorize", id, "--target", "deploy/prod", "--actor", "bob", "--json")
	if st.State != "COMPLETE" || len(st.Authorizations) != 2 {
		t.Fatalf("authorized: %+v", st)
	}
	// Repeating it records nothing.
	p.must([]int{0}, "authorize", id, "--target", "deploy/prod", "--actor", "bob")
	if r := p.must([]int{0}, "status", id, "--audit"); !strings.Contains(r.stdout, "authorization approved for deploy/prod by bob") || !strings.Contains(r.stdout, "authorization rejected for jira:OPS-1 by bob") {
		t.Fatalf("audit does not list the authorizations:\n%s", r.stdout)
	}
	p.must([]int{0}, "events", "verify", id)
	b := p.exportBundle(id, k)
	if code, reason := p.verifyAuth(b, k, "deploy/prod"); code != 0 {
		t.Fatalf("required target: exit %d %s", code, reason)
	}
	head, _ := exec.Command("git", "-C", p.dir, "rev-parse", "HEAD").Output()
	r := p.must([]int{0}, "bundle", "verify", b, "--trust", filepath.Join(k, "trust.json"), "--commit", strings.TrimSpace(string(head)),
		"--contract", ".proofgate/contract.yaml", "--require-authorization", "deploy/prod", "--json")
	if !strings.Contains(r.stdout, `"authorized": [`) || !strings.Contains(r.stdout, `"deploy/prod"`) || strings.Contains(r.stdout, `"jira:OPS-1"`) {
		t.Fatalf("accepted verdict does not list exactly the authorized target: %s", r.stdout)
	}
	for _, tc := range []struct{ target, reason string }{
		{"deploy/staging", "authorization-missing"}, // another target
		{"jira:OPS-1", "authorization-rejected"},    // a rejected authorization
	} {
		if code, reason := p.verifyAuth(b, k, "deploy/prod", tc.target); code != 1 || reason != tc.reason {
			t.Errorf("--require-authorization %s: exit %d reason %q, want 1 %s", tc.target, code, reason, tc.reason)
		}
	}
	if r := p.run("", "bundle", "verify", b, "--trust", filepath.Join(k, "trust.json"), "--any-source", "--any-contract", "--require-authorization", "has space"); r.code != 2 {
		t.Errorf("malformed target: exit %d", r.code)
	}
}

// A bundle of a run without any authorization is refused by a gate that
// requires one; the contract's hash did not change for it.
func TestAuthorizeMissingInBundle(t *testing.T) {
	k := keys(t)
	p, id := authRepo(t, false)
	if st := p.runJSON("approve", id, "--actor", "alice", "--json"); st.State != "COMPLETE" {
		t.Fatalf("state %s", st.State)
	}
	b := p.exportBundle(id, k)
	if code, _ := p.verifyAuth(b, k); code != 0 {
		t.Fatalf("no requirement: exit %d", code)
	}
	if code, reason := p.verifyAuth(b, k, "deploy/prod"); code != 1 || reason != "authorization-missing" {
		t.Fatalf("missing authorization: exit %d %q", code, reason)
	}
	// Authorized after COMPLETE, then rejected by someone else: withheld.
	p.must([]int{0}, "authorize", id, "--target", "deploy/prod", "--actor", "bob")
	p.must([]int{0}, "authorize", id, "--target", "deploy/prod", "--actor", "carol", "--reject", "--reason", "freeze")
	b = p.exportBundle(id, k)
	if code, reason := p.verifyAuth(b, k, "deploy/prod"); code != 1 || reason != "authorization-rejected" {
		t.Fatalf("rejected authorization: exit %d %q", code, reason)
	}
}

// Hostile: a stale source and a tampered projection refuse; usage errors
// exit 2.
func TestAuthorizeRefusals(t *testing.T) {
	p, id := authRepo(t, true)
	p.must([]int{2}, "authorize", id, "--actor", "bob")
	p.must([]int{2}, "authorize", id, "--target", "x")
	p.must([]int{2}, "authorize", id, "--target", "x", "--actor", "bob", "--reject")
	p.must([]int{1}, "authorize", id, "--target", "two words", "--actor", "bob")

	runJSONPath := filepath.Join(p.dir, ".proofgate", "runs", id, "run.json")
	orig, err := os.ReadFile(runJSONPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(orig), `"exit_code": 0`, `"exit_code": 9`, 1)
	if bad == string(orig) {
		t.Fatal("tamper did not apply")
	}
	os.WriteFile(runJSONPath, []byte(bad), 0o644)
	if r := p.must([]int{1}, "authorize", id, "--target", "deploy/prod", "--actor", "bob"); !strings.Contains(r.stderr, "projection") && !strings.Contains(r.stderr, "digest") {
		t.Fatalf("tampered projection: %s", r.stderr)
	}
	os.WriteFile(runJSONPath, orig, 0o644)

	p.write("flag.txt", "fixed\nedited\n")
	if r := p.must([]int{1}, "authorize", id, "--target", "deploy/prod", "--actor", "bob"); !strings.Contains(r.stderr, "STALE") {
		t.Fatalf("stale source: %s", r.stderr)
	}
	if st := p.status(id); st.State != "STALE" {
		t.Fatalf("state %s, want STALE", st.State)
	}
	if f := p.facts(id); f.count("COMPLETE") != 0 {
		t.Fatal("a stale run completed")
	}
}

// authorize killed at every append (before, torn, after) of its two
// (authorization.recorded, state.changed): the run reconciles, the next
// writer records a missing state change, and authorizing again as the
// same actor finishes it with one authorization and one COMPLETE.
func TestAuthorizeKilledAtEveryAppend(t *testing.T) {
	base, id := authRepo(t, true)
	base.must([]int{0}, "approve", id, "--actor", "alice")
	f := fixture{base: base.dir, runID: id}
	kills := 0
	for _, mode := range crashModes {
		for n := 1; n <= 4; n++ {
			p := f.clone(t)
			r := p.run(fmt.Sprintf("%s:%d", mode, n), "authorize", id, "--target", "deploy/prod", "--actor", "bob")
			if r.code != -9 {
				if r.code != 0 {
					t.Fatalf("%s:%d: exit %d %s", mode, n, r.code, r.stderr)
				}
				break
			}
			kills++
			st := p.status(id)
			if st.Writer != nil && !st.Writer.Alive {
				p.must([]int{0}, "events", "unlock", id, "--actor", "ops", "--older-than", "0s")
			}
			p.must([]int{0}, "authorize", id, "--target", "deploy/prod", "--actor", "bob")
			p.must([]int{0}, "events", "verify", id)
			fs := p.facts(id)
			auths := 0
			for _, l := range p.readLog(id) {
				if l.Type == "authorization.recorded" {
					auths++
				}
			}
			if fs.state != "COMPLETE" || fs.count("COMPLETE") != 1 || auths != 1 {
				t.Fatalf("%s:%d: state %s, %d COMPLETE transitions, %d authorizations", mode, n, fs.state, fs.count("COMPLETE"), auths)
			}
		}
	}
	if kills < 4 {
		t.Fatalf("only %d kills", kills)
	}
}
