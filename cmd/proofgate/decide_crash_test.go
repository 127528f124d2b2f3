package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// mainEnv makes the test binary run the CLI (see TestMain): the crash tests
// run it as a real process, built once with the package's tests.
const mainEnv = "PROOFGATE_TEST_MAIN"

// crashModes are the three places an append can be killed (eventlog.CrashEnv).
var crashModes = []string{"before", "torn", "after"}

// pg is the CLI run in one repository.
type pg struct {
	t   *testing.T
	dir string
}

type result struct {
	stdout, stderr string
	code           int // -9 when killed by SIGKILL
}

func (p pg) run(crash string, args ...string) result {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.invalid", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.invalid")
	if crash != "" {
		cmd.Env = append(cmd.Env, eventlog.CrashEnv+"="+crash)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ws.Signal() != syscall.SIGKILL {
				p.t.Fatalf("proofgate %v: killed by %v", args, ws.Signal())
			}
			res.code = -9
		} else {
			res.code = ee.ExitCode()
		}
	default:
		p.t.Fatalf("proofgate %v: %v", args, err)
	}
	return res
}

// must runs args and requires one of the exit codes.
func (p pg) must(codes []int, args ...string) result {
	p.t.Helper()
	r := p.run("", args...)
	if !slices.Contains(codes, r.code) {
		p.t.Fatalf("proofgate %s exited %d, want %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, codes, r.stdout, r.stderr)
	}
	return r
}

func (p pg) git(args ...string) {
	p.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.invalid", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func (p pg) write(name, content string) {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p pg) runs() []string {
	p.t.Helper()
	ents, err := os.ReadDir(filepath.Join(p.dir, ".proofgate", "runs"))
	if err != nil {
		p.t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}

// logLine is what the test reads from events.ndjson itself.
type logLine struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

type stateData struct {
	From, To, Actor, By string
}

type decisionData struct {
	Decision, Actor, State string
}

// readLog returns the complete lines of run id's log (a torn tail is left
// out, as every reader does).
func (p pg) readLog(id string) []logLine {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, ".proofgate", "runs", id, "events.ndjson"))
	if err != nil {
		p.t.Fatal(err)
	}
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(b[:bytes.LastIndexByte(b, '\n')+1]))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type != "" {
			out = append(out, l)
		}
	}
	return out
}

// logFacts is what the log says: the state it reaches, the transitions it
// records, and its decisions.
type logFacts struct {
	state       string
	transitions []stateData
	decisions   []decisionData
	supersedes  string
}

func (p pg) facts(id string) logFacts {
	var f logFacts
	for _, l := range p.readLog(id) {
		switch l.Type {
		case "run.planned":
			f.state = "PLANNED"
			var d struct{ Supersedes string }
			json.Unmarshal(l.Data, &d)
			f.supersedes = d.Supersedes
		case "state.changed":
			var d stateData
			json.Unmarshal(l.Data, &d)
			f.transitions = append(f.transitions, d)
			f.state = d.To
		case "approval.recorded":
			var d decisionData
			json.Unmarshal(l.Data, &d)
			f.decisions = append(f.decisions, d)
		}
	}
	return f
}

func (f logFacts) count(to string) int {
	n := 0
	for _, t := range f.transitions {
		if t.To == to {
			n++
		}
	}
	return n
}

// pendingDecision reports whether the log ends in a decision whose state
// change is not recorded yet (the next writer completes it).
func (f logFacts) pendingDecision() bool {
	if len(f.decisions) == 0 || f.state != "AWAITING_APPROVAL" {
		return false
	}
	return f.decisions[len(f.decisions)-1].State != "AWAITING_APPROVAL"
}

type statusJSON struct {
	RunID     string `json:"run_id"`
	State     string `json:"state"`
	Decisions []struct {
		Decision, Actor string
	} `json:"decisions"`
	Writer *struct {
		Alive bool `json:"alive"`
	} `json:"writer"`
	TornTail        bool            `json:"torn_tail"`
	DecisionPending json.RawMessage `json:"decision_pending"`
}

// status runs 'status RUN --json' and requires it to reconcile.
func (p pg) status(id string) statusJSON {
	p.t.Helper()
	r := p.run("", "status", id, "--json")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.RunID != id {
		p.t.Fatalf("status %s does not reconcile (exit %d): %v\n%s%s", id, r.code, err, r.stdout, r.stderr)
	}
	return st
}

// reconcile checks every run after a kill: status reconciles and agrees
// with the log, a decision left half-done is reported as pending, and a
// dead writer's lock is broken as documented.
func (p pg) reconcile() {
	p.t.Helper()
	for _, id := range p.runs() {
		if strings.HasPrefix(id, ".") {
			continue // a plan that never became a run
		}
		st := p.status(id)
		f := p.facts(id)
		if st.State != f.state {
			p.t.Fatalf("run %s: status says %s, the log says %s", id, st.State, f.state)
		}
		if f.pendingDecision() != (len(st.DecisionPending) > 0) {
			p.t.Fatalf("run %s: the log's pending decision is %v, status reports %q", id, f.pendingDecision(), st.DecisionPending)
		}
		if st.Writer != nil && !st.Writer.Alive {
			p.must([]int{0}, "events", "unlock", id, "--actor", "ops", "--older-than", "0s")
		}
	}
}

// final checks a finished run: the chain verifies, status and audit
// reconcile, each decision and each transition is recorded once.
func (p pg) final(id, state string, approvers ...string) {
	p.t.Helper()
	p.must([]int{0}, "events", "verify", id)
	p.must([]int{0, 1, 3}, "status", id, "--audit")
	st := p.status(id)
	f := p.facts(id)
	if st.State != state || f.state != state {
		p.t.Fatalf("run %s: status %s, log %s, want %s", id, st.State, f.state, state)
	}
	if n := f.count(state); n != 1 {
		p.t.Fatalf("run %s: %d transitions to %s, want 1: %+v", id, n, state, f.transitions)
	}
	var actors []string
	for _, d := range st.Decisions {
		actors = append(actors, d.Actor)
	}
	if len(f.decisions) != len(st.Decisions) || !slices.Equal(actors, approvers) {
		p.t.Fatalf("run %s: decisions %v (log: %d), want one each by %v", id, actors, len(f.decisions), approvers)
	}
	for _, e := range p.runs() {
		if strings.HasPrefix(e, ".") {
			p.t.Fatalf("left behind in the run store: %s", e)
		}
	}
}

// export exports a COMPLETE run and requires the gate to count exactly n
// approvals.
func (p pg) export(id string, keys string, n int) {
	p.t.Helper()
	out := filepath.Join(p.t.TempDir(), "b.tar.gz")
	p.must([]int{0}, "bundle", "export", id, "--key", filepath.Join(keys, "key.pem"), "-o", out)
	head, err := exec.Command("git", "-C", p.dir, "rev-parse", "HEAD").Output()
	if err != nil {
		p.t.Fatal(err)
	}
	r := p.must([]int{0}, "bundle", "verify", out, "--trust", filepath.Join(keys, "trust.json"),
		"--commit", strings.TrimSpace(string(head)), "--contract", ".proofgate/contract.yaml", "--require-approvals", fmt.Sprint(n), "--json")
	var v struct {
		Verdict   string `json:"verdict"`
		Approvals int    `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Verdict != "accepted" || v.Approvals != n {
		p.t.Fatalf("bundle verify: %s (want accepted with %d approvals)", r.stdout, n)
	}
}

// fixture is a repository with one run, copied for every kill.
type fixture struct {
	base  string
	runID string
}

const okContract = `version: 1
name: decide
defaults: {runtime: process, timeout: 30s}
checks:
  - {id: flag, run: [grep, -q, fixed, flag.txt]}
approval: {required: %d}
`

// newFixture makes a repository whose flag.txt holds flag and runs it:
// "fixed" makes the run AWAITING_APPROVAL, anything else BLOCKED; plan
// only plans.
func newFixture(t *testing.T, required int, flag string, plan bool) fixture {
	p := pg{t: t, dir: filepath.Join(t.TempDir(), "repo")}
	p.write(".proofgate/contract.yaml", fmt.Sprintf(okContract, required))
	p.write(".gitignore", ".proofgate/runs/\n")
	p.write("flag.txt", flag+"\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	switch {
	case plan:
		p.must([]int{0}, "plan")
	case flag == "fixed":
		p.must([]int{3}, "run", "--quiet")
	default:
		p.must([]int{1}, "run", "--quiet")
		p.write("flag.txt", "fixed\n")
		p.git("commit", "-q", "-am", "fix")
	}
	return fixture{base: p.dir, runID: p.runs()[0]}
}

// clone copies the fixture for one kill.
func (f fixture) clone(t *testing.T) pg {
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-a", f.base, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	return pg{t: t, dir: dir}
}

// keys makes a signing key and a trust store outside any repository.
func keys(t *testing.T) string {
	p := pg{t: t, dir: t.TempDir()}
	p.must([]int{0}, "keygen", "-o", "key.pem")
	p.must([]int{0}, "trust", "add", "--store", "trust.json", "--public-key", "key.pub.pem")
	return p.dir
}

// killCase is one decision killed at every append boundary.
type killCase struct {
	name     string
	fixture  func(t *testing.T) fixture
	setup    func(p pg, id string) // before the decision
	decide   func(id string) []string
	recovery bool // kill the recovering writer (events unlock) too, after a kill right after the decision's first append
	finish   func(p pg, id string)
}

// boundaries kills decide at its n-th append for every crash mode and n
// until the decision runs to its end without reaching append n. It returns
// the number of kills.
func boundaries(t *testing.T, c killCase) int {
	f := c.fixture(t)
	kills := 0
	for _, mode := range crashModes {
		for n := 1; ; n++ {
			if n > 20 {
				t.Fatalf("%s: more than 20 appends", c.name)
			}
			if !runKill(t, c, f, mode, n) {
				break
			}
			kills++
		}
	}
	return kills
}

func runKill(t *testing.T, c killCase, f fixture, mode string, n int) bool {
	killed := false
	t.Run(fmt.Sprintf("%s:%d", mode, n), func(t *testing.T) {
		p := f.clone(t)
		if c.setup != nil {
			c.setup(p, f.runID)
		}
		r := p.run(fmt.Sprintf("%s:%d", mode, n), c.decide(f.runID)...)
		if r.code != -9 {
			return // the decision made fewer than n appends
		}
		killed = true
		p.reconcile()
		c.finish(p, f.runID)
	})
	return killed
}

var (
	countMu    sync.Mutex
	totalKills int
)

// TestDecisionKilledAtEveryAppend kills approve, reject, cancel and retry
// (real processes, SIGKILL from inside at a chosen append: before it, with
// half its line written, right after its fsync) at every append they make.
// After each kill every run reconciles and agrees with its log, a decision
// whose state change is missing is reported and completed by the next
// writer, and re-running the same decision as the same actor finishes the
// run, with nothing counted twice.
func TestDecisionKilledAtEveryAppend(t *testing.T) {
	k := keys(t)
	approve := func(actor string) func(string) []string {
		return func(id string) []string { return []string{"approve", id, "--actor", actor} }
	}
	reject := func(id string) []string {
		return []string{"approve", id, "--actor", "carol", "--reject", "--reason", "no"}
	}
	cancel := func(id string) []string { return []string{"cancel", id, "--actor", "ops", "--reason", "stop"} }
	awaiting := func(req int) func(t *testing.T) fixture {
		return func(t *testing.T) fixture { return newFixture(t, req, "fixed", false) }
	}
	cancelled := func(p pg, id string) {
		r := p.must([]int{0, 1}, cancel(id)...)
		if r.code == 1 && !strings.Contains(r.stderr, "cannot cancel a run that is CANCELLED") {
			p.t.Fatalf("cancel again: %s", r.stderr)
		}
		p.final(id, "CANCELLED")
	}
	cases := []killCase{{
		name: "approve", fixture: awaiting(1), decide: approve("alice"), recovery: true,
		finish: func(p pg, id string) {
			r := p.must([]int{0}, approve("alice")(id)...)
			if !strings.Contains(r.stdout, "COMPLETE") {
				p.t.Fatalf("approve again: %s", r.stdout)
			}
			p.final(id, "COMPLETE", "alice")
			p.export(id, k, 1)
		},
	}, {
		name: "approve-first-of-two", fixture: awaiting(2), decide: approve("alice"),
		finish: func(p pg, id string) {
			if r := p.must([]int{0, 1}, approve("alice")(id)...); r.code == 1 && !strings.Contains(r.stderr, "alice already approved") {
				p.t.Fatalf("approve again: %s", r.stderr)
			}
			p.must([]int{0}, approve("bob")(id)...)
			p.final(id, "COMPLETE", "alice", "bob")
			p.export(id, k, 2)
		},
	}, {
		name: "approve-second-of-two", fixture: awaiting(2), decide: approve("bob"),
		setup: func(p pg, id string) { p.must([]int{0}, approve("alice")(id)...) },
		finish: func(p pg, id string) {
			p.must([]int{0}, approve("bob")(id)...)
			p.final(id, "COMPLETE", "alice", "bob")
			p.export(id, k, 2)
		},
	}, {
		name: "reject", fixture: awaiting(1), decide: reject, recovery: true,
		finish: func(p pg, id string) {
			r := p.must([]int{0}, reject(id)...)
			if !strings.Contains(r.stdout, "REJECTED") {
				p.t.Fatalf("reject again: %s", r.stdout)
			}
			p.final(id, "REJECTED", "carol")
		},
	}, {
		name: "cancel-awaiting", fixture: awaiting(1), decide: cancel, finish: cancelled,
	}, {
		name: "cancel-blocked", fixture: func(t *testing.T) fixture { return newFixture(t, 1, "broken", false) }, decide: cancel, finish: cancelled,
	}, {
		name: "cancel-planned", fixture: func(t *testing.T) fixture { return newFixture(t, 1, "fixed", true) }, decide: cancel, finish: cancelled,
	}, {
		name:    "retry",
		fixture: func(t *testing.T) fixture { return newFixture(t, 1, "broken", false) },
		decide:  func(id string) []string { return []string{"retry", id, "--actor", "ci", "--quiet"} },
		finish:  finishRetry,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := boundaries(t, c)
			if c.recovery {
				n += recoveryKills(t, c)
			}
			countMu.Lock()
			totalKills += n
			countMu.Unlock()
		})
	}
	t.Cleanup(func() {
		t.Logf("%d kills", totalKills)
		if !t.Failed() && totalKills < 50 {
			t.Errorf("%d kills, want at least 50", totalKills)
		}
	})
}

// recoveryKills kills a decision right after its first append (the
// decision recorded, its state change not), then kills the writer that
// recovers it (events unlock) at each of its appends.
func recoveryKills(t *testing.T, c killCase) int {
	f := c.fixture(t)
	kills := 0
	for _, mode := range crashModes {
		for n := 1; ; n++ {
			killed := false
			t.Run(fmt.Sprintf("recovery-%s:%d", mode, n), func(t *testing.T) {
				p := f.clone(t)
				if r := p.run("after:1", c.decide(f.runID)...); r.code != -9 {
					t.Fatalf("decision not killed: exit %d", r.code)
				}
				if st := p.status(f.runID); len(st.DecisionPending) == 0 || st.State != "AWAITING_APPROVAL" {
					t.Fatalf("after the decision's first append: %+v, want AWAITING_APPROVAL with the decision pending", st)
				}
				r := p.run(fmt.Sprintf("%s:%d", mode, n), "events", "unlock", f.runID, "--actor", "ops", "--older-than", "0s")
				if r.code != -9 {
					if r.code != 0 {
						t.Fatalf("unlock: exit %d: %s", r.code, r.stderr)
					}
					return
				}
				killed = true
				p.reconcile()
				c.finish(p, f.runID)
			})
			if !killed {
				break
			}
			kills++
		}
	}
	return kills
}

// finishRetry re-runs the retry until a successor awaits approval: an
// interrupted successor is itself retried, as status advises.
func finishRetry(p pg, old string) {
	target := old
	for range 3 {
		r := p.must([]int{1, 3}, "retry", target, "--actor", "ci", "--quiet")
		if r.code == 3 || strings.Contains(r.stderr, "which is AWAITING_APPROVAL") {
			break // the retry's new run ran to the end (the kill came after its last append)
		}
		_, next, ok := strings.Cut(r.stderr, "retry ")
		if !ok || !strings.Contains(r.stderr, "already retried as") {
			p.t.Fatalf("retry %s refused: %s", target, r.stderr)
		}
		target = strings.Fields(next)[0]
	}
	of := p.facts(old)
	if of.count("SUPERSEDED") != 1 || of.state != "SUPERSEDED" {
		p.t.Fatalf("run %s: %+v, want superseded once", old, of.transitions)
	}
	// Exactly one chain of successors, ending in one run that awaits approval.
	succ := map[string][]string{}
	awaiting := 0
	for _, id := range p.runs() {
		if strings.HasPrefix(id, ".") {
			p.t.Fatalf("left behind in the run store: %s", id)
		}
		f := p.facts(id)
		st := p.status(id)
		if st.State != f.state {
			p.t.Fatalf("run %s: status %s, log %s", id, st.State, f.state)
		}
		if f.supersedes != "" {
			succ[f.supersedes] = append(succ[f.supersedes], id)
		}
		if f.state == "AWAITING_APPROVAL" {
			awaiting++
		}
		p.must([]int{0}, "events", "verify", id)
	}
	for from, to := range succ {
		if len(to) != 1 {
			p.t.Fatalf("run %s has %d successors: %v", from, len(to), to)
		}
	}
	if awaiting != 1 {
		p.t.Fatalf("%d runs await approval, want 1", awaiting)
	}
}
