package run

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// The replay is the only defence against a hand-edited log whose chain was
// recomputed: every history below is a valid chain, its verification digest
// is recomputed over the lie, and run.json is the exact projection. Each
// must still be refused.

const hostileContract = `version: 1
name: t
defaults: {runtime: process}
criteria:
  - {id: c1, text: one}
checks:
  - {id: a, run: ['true']}
  - {id: b, run: ['true'], depends_on: [a], evidence: structured, criteria: [c1]}
approval: {required: 2}
`

// hist writes a hand-made history.
type hist struct {
	t       *testing.T
	l       *eventlog.Log
	p       replay.PlannedData
	results []replay.CheckReport
}

func (h *hist) add(typ string, d any) { h.t.Helper(); mustAppend(h.t, h.l, typ, d) }

func (h *hist) state(from, to replay.State) {
	h.add(replay.TypeState, replay.StateData{From: from, To: to})
}

func (h *hist) check(d replay.CheckFinishedData) {
	h.t.Helper()
	h.add(replay.TypeCheckStarted, replay.CheckStartedData{Check: d.Check})
	h.finish(d)
}

func (h *hist) finish(d replay.CheckFinishedData) {
	h.t.Helper()
	h.add(replay.TypeCheckFinished, d)
	h.results = append(h.results, replay.CheckReport{ID: d.Check, Outcome: d.Outcome, ExitCode: d.ExitCode, DurationMS: d.DurationMS,
		Stdout: d.Stdout, Stderr: d.Stderr, Attestation: d.Attestation, Detail: d.Detail})
}

func (h *hist) verify(worktree string) {
	h.t.Helper()
	rep := &replay.Report{RunID: h.l.Binding().Run, ContractHash: h.p.Contract.Hash, Source: h.l.Binding().Source, Checks: h.results}
	d, err := replay.VerificationDigest(rep)
	if err != nil {
		h.t.Fatal(err)
	}
	passed := true
	for _, c := range h.results {
		passed = passed && c.Outcome == runtime.Passed
	}
	h.add(replay.TypeVerification, replay.VerificationData{Digest: d, Passed: passed, Worktree: worktree})
}

func (h *hist) decide(decision, actor string, next replay.State, gh *replay.GitHubReview) {
	h.t.Helper()
	rep := &replay.Report{RunID: h.l.Binding().Run, ContractHash: h.p.Contract.Hash, Source: h.l.Binding().Source, Checks: h.results}
	d, _ := replay.VerificationDigest(rep)
	h.add(replay.TypeApproval, replay.ApprovalData{Decision: decision, Actor: actor, State: next, VerificationDigest: d,
		Contract: h.p.Contract.Hash, Source: replay.Source{Commit: h.p.Worktree.Commit, Tree: h.p.Worktree.Tree}, GitHub: gh})
}

var procAtt = &runtime.Attestation{Provider: "process"}

func passA() replay.CheckFinishedData {
	return replay.CheckFinishedData{Check: "a", Outcome: runtime.Passed, Attestation: procAtt}
}

func passB() replay.CheckFinishedData {
	return replay.CheckFinishedData{Check: "b", Outcome: runtime.Passed, Attestation: procAtt,
		Structured: &replay.Structured{Status: "passed", Criteria: []string{"c1"}}}
}

// verified writes a history up to AWAITING_APPROVAL with every check passed.
func (h *hist) verified() {
	h.state(replay.Planned, replay.Verifying)
	h.check(passA())
	h.check(passB())
	h.verify(h.p.Worktree.Digest)
	h.state(replay.Verifying, replay.AwaitingApproval)
}

// writeHostile plans a run, replaces its log with run.planned (after
// mutate) and the events body writes, and rewrites run.json as the exact
// replay when the replay accepts it (so only the replay rules can refuse).
func writeHostile(t *testing.T, mutate func(*replay.PlannedData), body func(h *hist)) string {
	t.Helper()
	f := newFixture(t, hostileContract)
	dir, planned, lg := emptyLog(t, f)
	if mutate != nil {
		mutate(&planned)
	}
	mustAppend(t, lg, replay.TypePlanned, planned)
	body(&hist{t: t, l: lg, p: planned})
	events := lg.Events()
	lg.Close()
	if rep, err := replay.Fold(f.c, events); err == nil {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, RunFile), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestHostileHistoryControl(t *testing.T) {
	dir := writeHostile(t, nil, func(h *hist) {
		h.verified()
		h.decide("approved", "alice", replay.AwaitingApproval, nil)
		h.decide("approved", "bob", replay.Complete, nil)
		h.state(replay.AwaitingApproval, replay.Complete)
	})
	rep, err := Audit(dir)
	if err != nil || rep.State != replay.Complete {
		t.Fatalf("an honest hand-written history is refused: %v", err)
	}
}

func TestReplayRefusesHostileHistories(t *testing.T) {
	zero := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name   string
		mutate func(*replay.PlannedData)
		body   func(h *hist)
	}{
		{"planned commit differs from the line binding", func(p *replay.PlannedData) { p.Worktree.Commit = strings.Repeat("e", 40) }, func(h *hist) {}},
		{"dirty work tree without allow_dirty", func(p *replay.PlannedData) { p.Worktree.Dirty = true }, func(h *hist) {}},
		{"planned check list differs from the contract", func(p *replay.PlannedData) { p.Checks = []string{"a"} }, func(h *hist) {}},
		{"passed with a non-zero exit code", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			d := passA()
			d.ExitCode = 1
			h.check(d)
			h.check(passB())
			h.verify(h.p.Worktree.Digest)
			h.state(replay.Verifying, replay.AwaitingApproval)
		}},
		{"passed without a runtime attestation", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			d := passA()
			d.Attestation = nil
			h.check(d)
		}},
		{"passed by another runtime than the contract's", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			d := passA()
			d.Attestation = &runtime.Attestation{Provider: "fake"}
			h.check(d)
		}},
		{"structured check passed without its report", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.check(passA())
			d := passB()
			d.Structured = nil
			h.check(d)
		}},
		{"structured check passed with a report missing a criterion", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.check(passA())
			d := passB()
			d.Structured = &replay.Structured{Status: "passed"}
			h.check(d)
		}},
		{"check started before its dependency passed", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.check(passB())
		}},
		{"empty blob digest", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			d := passA()
			d.Stdout = &runtime.Stream{Digest: ""}
			h.check(d)
		}},
		{"blob digest that walks out of blobs/", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			d := passA()
			d.Stdout = &runtime.Stream{Digest: "sha256:../../run.json"}
			h.check(d)
		}},
		{"verification completed twice", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.check(passA())
			h.check(passB())
			h.verify(h.p.Worktree.Digest)
			h.verify(h.p.Worktree.Digest)
		}},
		{"verified on another work tree, then awaiting approval", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.check(passA())
			h.check(passB())
			h.verify(zero)
			h.state(replay.Verifying, replay.AwaitingApproval)
		}},
		{"budget exceeded, then awaiting approval", nil, func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.check(passA())
			h.check(passB())
			h.add(replay.TypeBudget, replay.BudgetData{MaxDurationMS: 1})
			h.verify(h.p.Worktree.Digest)
			h.state(replay.Verifying, replay.AwaitingApproval)
		}},
		{"one GitHub user approving under two logins", nil, func(h *hist) {
			h.verified()
			h.decide("approved", "alice", replay.AwaitingApproval, &replay.GitHubReview{Login: "alice", UserID: 7, ReviewID: 1})
			h.decide("approved", "alice-renamed", replay.Complete, &replay.GitHubReview{Login: "alice-renamed", UserID: 7, ReviewID: 2})
			h.state(replay.AwaitingApproval, replay.Complete)
		}},
		{"one actor approving twice in different case", nil, func(h *hist) {
			h.verified()
			h.decide("approved", "alice", replay.AwaitingApproval, nil)
			h.decide("approved", "Alice", replay.Complete, nil)
			h.state(replay.AwaitingApproval, replay.Complete)
		}},
		{"decision names a state the replay does not reach", nil, func(h *hist) {
			h.verified()
			h.decide("approved", "alice", replay.Complete, nil)
		}},
		{"rejection names another state", nil, func(h *hist) {
			h.verified()
			h.decide("rejected", "alice", replay.Complete, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeHostile(t, tc.mutate, tc.body)
			for name, audit := range map[string]func() error{
				"Audit":   func() error { _, err := Audit(dir); return err },
				"AuditFS": func() error { _, err := replay.AuditFS(os.DirFS(dir), replay.BlobsVerified()); return err },
			} {
				var ae *replay.AuditError
				err := func() (err error) {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("%s panicked: %v", name, p)
						}
					}()
					return audit()
				}()
				if !errors.As(err, &ae) || ae.Reason == replay.ReasonProjection || ae.Reason == replay.ReasonProjectionLag {
					t.Fatalf("%s accepted the history (err %v)", name, err)
				}
			}
		})
	}
}

// A context file that is a FIFO (or a device) must be refused at once, not
// block the planner until someone writes to it.
func TestLoadContextRefusesNonRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	mkfifo(t, fifo)
	for _, p := range []string{fifo, "/dev/zero", t.TempDir()} {
		done := make(chan error, 1)
		go func() { _, err := LoadContext(p); done <- err }()
		select {
		case err := <-done:
			var ce *ContextError
			if !errors.As(err, &ce) {
				t.Fatalf("%s: %v, want *ContextError", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("LoadContext(%s) blocked", p)
		}
	}
}

// A work-tree contract replaced by a FIFO after planning must not hang
// status or approve: the run is STALE (the contract no longer loads).
func TestFreshnessWithContractFIFO(t *testing.T) {
	f := newFixture(t, twoChecks)
	cpath := filepath.Join(t.TempDir(), "contract.yaml") // outside the repository: only the contract tells
	if err := os.WriteFile(cpath, []byte(twoChecks), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Plan(context.Background(), PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "file:" + cpath})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.CheckFresh(context.Background(), f.fresh()); err != nil {
		t.Fatalf("fresh run: %v", err)
	}
	os.Remove(cpath)
	mkfifo(t, cpath)
	done := make(chan error, 1)
	go func() { done <- r.CheckFresh(context.Background(), f.fresh()) }()
	select {
	case err := <-done:
		var se *StaleError
		if !errors.As(err, &se) {
			t.Fatalf("%v, want *StaleError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CheckFresh blocked on a FIFO contract")
	}
}
