package run

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// gitRepo makes a repository with one commit holding files.
func gitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files[".gitignore"] = ".proofgate/runs/\n"
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q", ".")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "init")
	return dir
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

const twoChecks = `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: a, run: ['true']}
  - {id: b, run: [sh, -c, 'echo out; echo err >&2']}
approval: {required: 1}
`

type fixture struct {
	repo, state string
	c           *contract.Resolved
}

func newFixture(t testing.TB, contractYAML string) *fixture {
	t.Helper()
	repo := gitRepo(t, map[string]string{"README.md": "hi\n"})
	c, err := contract.Parse("contract.yaml", []byte(contractYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{repo: repo, state: filepath.Join(repo, ".proofgate"), c: c}
}

func (f *fixture) plan(t *testing.T) *Run {
	t.Helper()
	r, err := Plan(context.Background(), PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) exec(t *testing.T, r *Run) {
	t.Helper()
	err := r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 2,
		Runtimes: map[string]runtime.Runtime{"process": process.New()}})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) fresh() Freshness { return Freshness{RepoDir: f.repo, StateDir: f.state} }

// complete returns the directory of a COMPLETE run.
func (f *fixture) complete(t *testing.T) string {
	t.Helper()
	r := f.plan(t)
	defer r.Close()
	f.exec(t, r)
	if st := r.State(); st != replay.AwaitingApproval {
		t.Fatalf("state %s, want AWAITING_APPROVAL", st)
	}
	if err := r.Decide(context.Background(), DecisionOptions{Actor: "alice", Fresh: f.fresh()}); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st != replay.Complete {
		t.Fatalf("state %s, want COMPLETE", st)
	}
	return r.Dir
}

func TestLifecycleHappyPath(t *testing.T) {
	f := newFixture(t, twoChecks)
	dir := f.complete(t)
	rep, err := Audit(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != replay.Complete || len(rep.Checks) != 2 || len(rep.Decisions) != 1 || rep.Decisions[0].Actor != "alice" {
		t.Fatalf("report %+v", rep)
	}
	for _, c := range rep.Checks {
		if c.Outcome != runtime.Passed || c.Stdout == nil || c.Attestation == nil || c.Attestation.Provider != "process" || c.Attestation.Sandboxed {
			t.Fatalf("check %+v", c)
		}
	}
	if len(rep.Blobs) < 2 {
		t.Fatalf("blobs %v", rep.Blobs)
	}
	d, err := replay.VerificationDigest(rep)
	if err != nil || d != rep.VerificationDigest {
		t.Fatalf("digest %s vs %s (%v)", d, rep.VerificationDigest, err)
	}
	// the checks' process records came from kept slots, dropped with
	// the run's checks: nothing is left in procs (ADR 0028)
	if ents, err := os.ReadDir(filepath.Join(dir, ProcDir)); err != nil && !errors.Is(err, fs.ErrNotExist) || len(ents) != 0 {
		t.Fatalf("procs after the run: %v %v", ents, err)
	}
}

func auditReason(t *testing.T, dir string) replay.AuditReason {
	t.Helper()
	_, err := Audit(dir)
	var ae *replay.AuditError
	if !errors.As(err, &ae) {
		t.Fatalf("audit: %v, want *AuditError", err)
	}
	return ae.Reason
}

func readLines(t testing.TB, p string) []string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLines(t *testing.T, p string, lines []string) {
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A removed decision (the last two lines: approval + COMPLETE) leaves a
// valid shorter chain, but the projection still says COMPLETE: refused.
func TestRemovedDecisionRefused(t *testing.T) {
	f := newFixture(t, twoChecks)
	dir := f.complete(t)
	p := filepath.Join(dir, EventsFile)
	lines := readLines(t, p)
	writeLines(t, p, lines[:len(lines)-2])
	if r := auditReason(t, dir); r != replay.ReasonProjection {
		t.Fatalf("reason %s, want %s", r, replay.ReasonProjection)
	}
}

// Editing a recorded outcome in the projection is refused by audit and by
// Decide, which also recomputes the digest from run.json.
func TestTamperedProjectionRefused(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.plan(t)
	f.exec(t, r)
	p := filepath.Join(r.Dir, RunFile)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `"exit_code": 0`, `"exit_code": 7`, 1)), 0o644)
	err := r.Decide(context.Background(), DecisionOptions{Actor: "alice", Fresh: f.fresh()})
	var ae *replay.AuditError
	if !errors.As(err, &ae) || ae.Reason != replay.ReasonProjection {
		t.Fatalf("decide: %v, want projection-tampered", err)
	}
	r.Close()
	if _, err := Open(f.state, r.ID); !errors.As(err, &ae) {
		t.Fatalf("open of a tampered run: %v", err)
	}
}

// A writer that died between an append and the projection leaves a lagging
// run.json: reported as lag, not tampering, and repaired by the next writer.
func TestProjectionLagRepaired(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.plan(t)
	p := filepath.Join(r.Dir, RunFile)
	old, _ := os.ReadFile(p)
	f.exec(t, r)
	r.Close()
	os.WriteFile(p, old, 0o644)
	if reason := auditReason(t, r.Dir); reason != replay.ReasonProjectionLag {
		t.Fatalf("reason %s, want %s", reason, replay.ReasonProjectionLag)
	}
	r2, err := Open(f.state, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if _, err := Audit(r.Dir); err != nil {
		t.Fatalf("after repair: %v", err)
	}
}

func TestSecondWriterRefused(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.plan(t)
	defer r.Close()
	_, err := Open(f.state, r.ID)
	var he *lock.HeldError
	if !errors.As(err, &he) {
		t.Fatalf("second open: %v, want *lock.HeldError", err)
	}
}

func TestStaleness(t *testing.T) {
	for name, mutate := range map[string]func(t *testing.T, repo string){
		"tracked edit": func(t *testing.T, repo string) { os.WriteFile(filepath.Join(repo, "README.md"), []byte("x"), 0o644) },
		"untracked":    func(t *testing.T, repo string) { os.WriteFile(filepath.Join(repo, "new.txt"), []byte("x"), 0o644) },
		"commit":       func(t *testing.T, repo string) { git(t, repo, "commit", "-q", "--allow-empty", "-m", "x") },
		"staged": func(t *testing.T, repo string) {
			os.WriteFile(filepath.Join(repo, "README.md"), []byte("y"), 0o644)
			git(t, repo, "add", "README.md")
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, twoChecks)
			r := f.plan(t)
			defer r.Close()
			f.exec(t, r)
			mutate(t, f.repo)
			err := r.Decide(context.Background(), DecisionOptions{Actor: "alice", Fresh: f.fresh()})
			var se *StaleError
			if !errors.As(err, &se) {
				t.Fatalf("decide: %v, want *StaleError", err)
			}
			if r.State() != replay.Stale {
				t.Fatalf("state %s", r.State())
			}
			// the state dir itself never makes a run stale
		})
	}
}

func TestStateDirDoesNotMakeStale(t *testing.T) {
	f := newFixture(t, twoChecks)
	os.Remove(filepath.Join(f.repo, ".gitignore"))
	git(t, f.repo, "commit", "-q", "-am", "no ignore")
	r := f.plan(t)
	defer r.Close()
	f.exec(t, r)
	if err := r.CheckFresh(context.Background(), f.fresh()); err != nil {
		t.Fatalf("the run's own files made it stale: %v", err)
	}
}

// emptyLog plans a run and replaces its log with an empty one under the
// same binding, for tests that write histories by hand.
func emptyLog(t *testing.T, f *fixture) (dir string, planned replay.PlannedData, lg *eventlog.Log) {
	t.Helper()
	r := f.plan(t)
	planned = r.Planned
	r.Close()
	os.Remove(filepath.Join(r.Dir, EventsFile))
	lg, err := eventlog.Create(filepath.Join(r.Dir, EventsFile), eventlog.Binding{Run: r.ID,
		Source: eventlog.Source{Commit: planned.Worktree.Commit, Tree: planned.Worktree.Tree}, Contract: planned.Contract.Hash})
	if err != nil {
		t.Fatal(err)
	}
	return r.Dir, planned, lg
}

// handLog writes a hand-made log for the fold tests.
func handLog(t *testing.T, f *fixture, events func(l *eventlog.Log, planned replay.PlannedData)) string {
	t.Helper()
	dir, planned, lg := emptyLog(t, f)
	if _, err := lg.Append(replay.TypePlanned, planned); err != nil {
		t.Fatal(err)
	}
	events(lg, planned)
	lg.Close()
	return dir
}

func mustAppend(t *testing.T, l *eventlog.Log, typ string, data any) {
	t.Helper()
	if _, err := l.Append(typ, data); err != nil {
		t.Fatal(err)
	}
}

func TestFoldRefusesIllegalHistories(t *testing.T) {
	one := "version: 1\nname: t\ndefaults: {runtime: process}\nchecks:\n  - {id: a, run: ['true']}\n"
	for _, tc := range []struct {
		name   string
		reason replay.AuditReason
		write  func(t *testing.T, l *eventlog.Log, p replay.PlannedData)
	}{
		{"complete without approval", replay.ReasonIllegalTransition, func(t *testing.T, l *eventlog.Log, p replay.PlannedData) {
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Complete})
		}},
		{"unknown event type", replay.ReasonUnknownEvent, func(t *testing.T, l *eventlog.Log, p replay.PlannedData) {
			mustAppend(t, l, "check.faked", map[string]string{"x": "y"})
		}},
		{"check not in contract", replay.ReasonBadEvent, func(t *testing.T, l *eventlog.Log, p replay.PlannedData) {
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Verifying})
			mustAppend(t, l, replay.TypeCheckStarted, replay.CheckStartedData{Check: "zzz"})
		}},
		{"state from the wrong state", replay.ReasonIllegalTransition, func(t *testing.T, l *eventlog.Log, p replay.PlannedData) {
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Verifying, To: replay.AwaitingApproval})
		}},
		{"verification digest forged", replay.ReasonDigest, func(t *testing.T, l *eventlog.Log, p replay.PlannedData) {
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Verifying})
			mustAppend(t, l, replay.TypeCheckStarted, replay.CheckStartedData{Check: "a"})
			mustAppend(t, l, replay.TypeCheckFinished, replay.CheckFinishedData{Check: "a", Outcome: runtime.Failed, ExitCode: 1})
			mustAppend(t, l, replay.TypeVerification, replay.VerificationData{Digest: "sha256:" + strings.Repeat("0", 64), Passed: true})
		}},
		{"awaiting approval after a failure", replay.ReasonIllegalTransition, func(t *testing.T, l *eventlog.Log, p replay.PlannedData) {
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Verifying})
			mustAppend(t, l, replay.TypeCheckStarted, replay.CheckStartedData{Check: "a"})
			mustAppend(t, l, replay.TypeCheckFinished, replay.CheckFinishedData{Check: "a", Outcome: runtime.Failed, ExitCode: 1})
			rep := &replay.Report{RunID: l.Binding().Run, ContractHash: p.Contract.Hash, Source: eventlog.Source{Commit: p.Worktree.Commit, Tree: p.Worktree.Tree},
				Checks: []replay.CheckReport{{ID: "a", Outcome: runtime.Failed, ExitCode: 1}}}
			d, _ := replay.VerificationDigest(rep)
			mustAppend(t, l, replay.TypeVerification, replay.VerificationData{Digest: d, Passed: false})
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Verifying, To: replay.AwaitingApproval})
		}},
		{"approval bound to another verification", replay.ReasonDecision, func(t *testing.T, l *eventlog.Log, p replay.PlannedData) {
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Verifying})
			mustAppend(t, l, replay.TypeCheckStarted, replay.CheckStartedData{Check: "a"})
			mustAppend(t, l, replay.TypeCheckFinished, replay.CheckFinishedData{Check: "a", Outcome: runtime.Passed, Attestation: &runtime.Attestation{Provider: "process"}})
			rep := &replay.Report{RunID: l.Binding().Run, ContractHash: p.Contract.Hash, Source: eventlog.Source{Commit: p.Worktree.Commit, Tree: p.Worktree.Tree},
				Checks: []replay.CheckReport{{ID: "a", Outcome: runtime.Passed, Attestation: &runtime.Attestation{Provider: "process"}}}}
			d, _ := replay.VerificationDigest(rep)
			mustAppend(t, l, replay.TypeVerification, replay.VerificationData{Digest: d, Passed: true, Worktree: p.Worktree.Digest})
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Verifying, To: replay.AwaitingApproval})
			mustAppend(t, l, replay.TypeApproval, replay.ApprovalData{Decision: "approved", Actor: "x", State: replay.Complete, VerificationDigest: "sha256:" + strings.Repeat("1", 64),
				Contract: p.Contract.Hash, Source: replay.Source{Commit: p.Worktree.Commit, Tree: p.Worktree.Tree}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, one)
			dir := handLog(t, f, func(l *eventlog.Log, p replay.PlannedData) { tc.write(t, l, p) })
			if r := auditReason(t, dir); r != tc.reason {
				_, err := Audit(dir)
				t.Fatalf("reason %s (%v), want %s", r, err, tc.reason)
			}
		})
	}
}

func TestStructuredReport(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("artifact"), 0o644)
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(repo, "link"))
	sum := "f4d2c5e3a1b0bd6b1b7c0b4d7b7f4e1c0a5f2d3e4c5b6a7980a1b2c3d4e5f607" // not the digest of a.txt
	real := sha256hex([]byte("artifact"))
	for _, tc := range []struct {
		name, out, want string
	}{
		{"passes", `{"status":"passed","criteria":["c1"],"artifacts":[{"path":"a.txt","sha256":"` + real + `"}]}`, ""},
		{"prefixed digest", `{"status":"passed","criteria":["c1"],"artifacts":[{"path":"a.txt","sha256":"sha256:` + real + `"}]}`, ""},
		{"last line wins", `{"status":"failed","criteria":[]}` + "\n" + `{"status":"passed","criteria":["c1"]}`, ""},
		{"no report", "plain text\n", "no JSON report line"},
		{"failed status", `{"status":"failed","criteria":["c1"]}`, `status "failed"`},
		{"missing criterion", `{"status":"passed","criteria":[]}`, `criterion "c1" not covered`},
		{"escaping path", `{"status":"passed","criteria":["c1"],"artifacts":[{"path":"../outside","sha256":"` + real + `"}]}`, "escapes the repository"},
		{"absolute path", `{"status":"passed","criteria":["c1"],"artifacts":[{"path":"/etc/passwd","sha256":"` + real + `"}]}`, "escapes the repository"},
		{"symlink out", `{"status":"passed","criteria":["c1"],"artifacts":[{"path":"link","sha256":"` + sha256hex([]byte("secret")) + `"}]}`, "through a link"},
		{"wrong digest", `{"status":"passed","criteria":["c1"],"artifacts":[{"path":"a.txt","sha256":"` + sum + `"}]}`, "does not match"},
		{"missing artifact", `{"status":"passed","criteria":["c1"],"artifacts":[{"path":"nope","sha256":"` + real + `"}]}`, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, found := findReport([]byte(tc.out))
			got := judgeReport(rep, found, []string{"c1"}, repo)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContextSnapshots(t *testing.T) {
	obj := map[string]any{"query": "q", "references": []string{"r"}, "provenance": map[string]string{"tool": "t"}}
	h := digestOf(t, obj)
	obj["snapshot_hash"] = h
	good, _ := json.Marshal(obj)
	if s, err := ParseContext("f", good); err != nil || len(s) != 1 || s[0].Hash != h {
		t.Fatalf("good: %v %v", s, err)
	}
	arr, _ := json.Marshal([]any{obj, obj})
	if s, err := ParseContext("f", arr); err != nil || len(s) != 2 {
		t.Fatalf("array: %v %v", s, err)
	}
	obj["query"] = "changed"
	bad, _ := json.Marshal(obj)
	if _, err := ParseContext("f", bad); err == nil || !strings.Contains(err.Error(), "snapshot_hash") {
		t.Fatalf("tampered snapshot accepted: %v", err)
	}
	obj["extra"] = 1
	extra, _ := json.Marshal(obj)
	if _, err := ParseContext("f", extra); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("unknown field accepted: %v", err)
	}
	for _, in := range []string{"", "[]", "null", "3", `"x"`, "[1]", "{"} {
		if _, err := ParseContext("f", []byte(in)); err == nil {
			t.Fatalf("%q accepted", in)
		}
	}
}

func FuzzParseContext(f *testing.F) {
	f.Add([]byte(`{"query":"q","references":[],"provenance":{},"snapshot_hash":"sha256:00"}`))
	f.Add([]byte(`[{"query":"q"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > MaxContextFile {
			return
		}
		s, err := ParseContext("f", b)
		if err == nil && len(s) == 0 {
			t.Fatal("no snapshots and no error")
		}
	})
}

// Unlock refuses a live writer's lock, says so when there is no lock, and
// never touches the log in either case.
func TestUnlockRefusesLiveAndMissingLocks(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.plan(t)
	_, err := Unlock(f.state, r.ID, "ops", 0, time.Now().Add(time.Hour))
	var refused *lock.BreakRefused
	if !errors.As(err, &refused) {
		t.Fatalf("unlock of a live writer: %v, want *lock.BreakRefused", err)
	}
	head, n := r.Head()
	r.Close()
	if _, err := Unlock(f.state, r.ID, "ops", 0, time.Now()); !errors.Is(err, ErrNoLock) {
		t.Fatalf("unlock without a lock: %v, want ErrNoLock", err)
	}
	if _, err := Unlock(f.state, r.ID, "", 0, time.Now()); err == nil {
		t.Fatal("unlock without an actor accepted")
	}
	rep, err := Audit(r.Dir)
	if err != nil || rep.ChainHead != head || rep.ChainLength != n {
		t.Fatalf("the log changed: %v %+v", err, rep)
	}
}
