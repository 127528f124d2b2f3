package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// manyChecks is a contract of n quick checks.
func manyChecks(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: t\ndefaults: {runtime: process, timeout: 20s}\nchecks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: c%02d, run: [sh, -c, 'echo out %d']}\n", i, i)
	}
	return b.String()
}

// A reader (status, list, audit) running while a live writer appends must
// never see tampering: the writer appends to the log, then rewrites
// run.json, so a reader that read the log before the writer advanced used
// to find a run.json *ahead* of it and called that projection-tampered.
func TestAuditDuringLiveWriterNeverTampered(t *testing.T) {
	f := newFixture(t, manyChecks(40))
	r := f.plan(t)
	defer r.Close()
	done := make(chan error, 1)
	go func() {
		done <- r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 4,
			Runtimes: map[string]runtime.Runtime{"process": process.New()}})
	}()
	var audits, lags int
	var bad error
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		_, err := Audit(r.Dir)
		audits++
		switch {
		case err == nil:
		case replay.IsReason(err, replay.ReasonProjectionLag), isTorn(err):
			lags++
		case bad == nil:
			bad = fmt.Errorf("audit %d during a live run: %w", audits, err)
		}
	}
	if bad != nil {
		t.Fatal(bad)
	}
	t.Logf("%d audits, %d saw the projection lagging or a torn tail", audits, lags)
	if _, err := Audit(r.Dir); err != nil {
		t.Fatal(err)
	}
}

// budgetChain is a dependency chain whose first link outlives the budget.
const budgetChain = `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
budget: {max_duration: 700ms}
checks:
  - {id: quick, run: ['true']}
  - {id: slow, run: [sleep, '10'], depends_on: [quick]}
  - {id: after-slow, run: ['true'], depends_on: [slow]}
  - {id: also-after-quick, run: [sleep, '10'], depends_on: [quick]}
  - {id: leaf, run: ['true'], depends_on: [after-slow, also-after-quick]}
  - {id: independent, run: ['true']}
`

// Budget expiry mid-check with a dependency chain and --jobs 2: every
// check ends with a recorded outcome, nothing that did not pass is
// recorded passed, the run is BLOCKED with the reason, promptly.
func TestBudgetExpiryMidChain(t *testing.T) {
	f := newFixture(t, budgetChain)
	r := f.plan(t)
	defer r.Close()
	start := time.Now()
	err := r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 2,
		Runtimes: map[string]runtime.Runtime{"process": process.New()}})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("exec took %s; the budget is 700ms", d)
	}
	rep, err := Audit(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != replay.Blocked || len(rep.Checks) != 6 || len(rep.Pending) != 0 {
		t.Fatalf("state %s, %d checks, pending %v", rep.State, len(rep.Checks), rep.Pending)
	}
	want := map[string]runtime.Outcome{"quick": runtime.Passed, "independent": runtime.Passed,
		"after-slow": runtime.Skipped, "leaf": runtime.Skipped}
	for _, c := range rep.Checks {
		if w, ok := want[c.ID]; ok && c.Outcome != w {
			t.Errorf("%s: %s, want %s", c.ID, c.Outcome, w)
		}
		if (c.ID == "slow" || c.ID == "also-after-quick") && c.Outcome == runtime.Passed {
			t.Errorf("%s recorded passed though the budget killed it", c.ID)
		}
	}
	b, _ := os.ReadFile(filepath.Join(r.Dir, EventsFile))
	if !strings.Contains(string(b), `"type":"budget.exceeded"`) || !strings.Contains(string(b), "budget.max_duration exceeded") {
		t.Fatal("no budget.exceeded event or reason")
	}
}

// Cancellation (SIGINT reaches Exec as a cancelled context) must not leave
// the run VERIFYING with nobody saying why: it ends CANCELLED with the
// reason, every check has an outcome, and none that was killed passed.
func TestInterruptedExecEndsCancelled(t *testing.T) {
	f := newFixture(t, budgetChain)
	r := f.plan(t)
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	err := r.Exec(ctx, ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 2,
		Runtimes: map[string]runtime.Runtime{"process": process.New()}})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("exec: %v, want the cancellation", err)
	}
	rep, aerr := Audit(r.Dir)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if rep.State != replay.Cancelled {
		t.Fatalf("state %s after an interrupt, want CANCELLED", rep.State)
	}
	for _, c := range rep.Checks {
		if (c.ID == "slow" || c.ID == "also-after-quick") && c.Outcome == runtime.Passed {
			t.Errorf("%s recorded passed though it was killed", c.ID)
		}
	}
	b, _ := os.ReadFile(filepath.Join(r.Dir, EventsFile))
	if !strings.Contains(string(b), `"to":"CANCELLED"`) || !strings.Contains(string(b), "interrupted") {
		t.Fatalf("no CANCELLED transition with a reason:\n%s", b)
	}
}
