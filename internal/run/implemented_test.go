package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// implementing plans a run and moves it to IMPLEMENTING, as a session's
// run is; the run is closed.
func (f *fixture) implementing(t *testing.T) *Run {
	t.Helper()
	r := f.plan(t)
	defer r.Close()
	if err := r.transition(replay.Implementing, replay.StateData{Reason: "agent session"}); err != nil {
		t.Fatal(err)
	}
	return r
}

// agentCommit changes and commits the work tree, as an agent does.
func (f *fixture) agentCommit(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.repo, "agent.txt"), []byte("written by the agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "agent")
}

func (f *fixture) planSuccessor(a string) (*Run, error) {
	return Plan(context.Background(), PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test", ImplementedBy: a})
}

func implReason(t *testing.T, err error) ImplementedByReason {
	t.Helper()
	var ie *ImplementedByError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T), want *ImplementedByError", err, err)
	}
	return ie.Reason
}

// The successor binds the agent's commit, records the implementation run's
// chain, source and contract, supersedes it, and verifies to COMPLETE.
func TestImplementedBySuccessor(t *testing.T) {
	f := newFixture(t, twoChecks)
	a := f.implementing(t)
	aRep, err := Audit(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	f.agentCommit(t)
	// The agent changed the tree: status does not mark an IMPLEMENTING run STALE.
	st, err := Inspect(context.Background(), f.state, a.ID, f.fresh())
	if err != nil || st.State != replay.Implementing {
		t.Fatalf("status of the implementation run: %v %v", st, err)
	}
	b, err := f.planSuccessor(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ib := b.Planned.ImplementedBy
	want := replay.ImplementedBy{Run: a.ID, Head: aRep.ChainHead, Length: aRep.ChainLength,
		Source: replay.Source{Commit: aRep.Source.Commit, Tree: aRep.Source.Tree}, Contract: aRep.ContractHash}
	if ib == nil || *ib != want {
		t.Fatalf("implemented_by %+v, want %+v", ib, want)
	}
	if b.Report().Source.Commit == aRep.Source.Commit {
		t.Fatal("the successor is bound to the implementation's commit, not the agent's")
	}
	after, err := Audit(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != replay.Superseded || after.ChainLength != aRep.ChainLength+1 {
		t.Fatalf("implementation run: %s with %d events", after.State, after.ChainLength)
	}
	f.exec(t, b)
	if err := b.Decide(context.Background(), DecisionOptions{Actor: "alice", Fresh: f.fresh()}); err != nil {
		t.Fatal(err)
	}
	rep, err := Audit(b.Dir)
	if err != nil || rep.State != replay.Complete || rep.ImplementedBy == nil || *rep.ImplementedBy != want {
		t.Fatalf("successor audit: %+v %v", rep, err)
	}
}

func TestImplementedByRefusals(t *testing.T) {
	t.Run("not implementing", func(t *testing.T) {
		f := newFixture(t, twoChecks)
		a := f.plan(t)
		a.Close()
		_, err := f.planSuccessor(a.ID)
		if r := implReason(t, err); r != ImplNotImplementing {
			t.Fatalf("reason %s", r)
		}
	})
	t.Run("another contract", func(t *testing.T) {
		f := newFixture(t, twoChecks)
		a := f.implementing(t)
		f.agentCommit(t)
		c, err := contract.Parse("contract.yaml", []byte(strings.Replace(twoChecks, "required: 1", "required: 2", 1)), "")
		if err != nil {
			t.Fatal(err)
		}
		f.c = c
		_, err = f.planSuccessor(a.ID)
		if r := implReason(t, err); r != ImplContract {
			t.Fatalf("reason %s", r)
		}
		if rep, _ := Audit(a.Dir); rep.State != replay.Implementing {
			t.Fatalf("a refused successor moved the implementation run to %s", rep.State)
		}
	})
	t.Run("supersedes too", func(t *testing.T) {
		f := newFixture(t, twoChecks)
		a := f.implementing(t)
		_, err := Plan(context.Background(), PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, ImplementedBy: a.ID, Supersedes: a.ID})
		if r := implReason(t, err); r != ImplOptions {
			t.Fatalf("reason %s", r)
		}
	})
	t.Run("successor moved on", func(t *testing.T) {
		f := newFixture(t, twoChecks)
		a := f.implementing(t)
		b, err := f.planSuccessor(a.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.exec(t, b)
		b.Close()
		_, err = f.planSuccessor(a.ID)
		if r := implReason(t, err); r != ImplSucceeded {
			t.Fatalf("reason %s", r)
		}
	})
	t.Run("retry of an implementing run", func(t *testing.T) {
		f := newFixture(t, twoChecks)
		a := f.implementing(t)
		_, err := Retry(context.Background(), RetryOptions{ID: a.ID, Actor: "x", Plan: PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c}})
		var se *StateError
		if !errors.As(err, &se) || se.State != replay.Implementing {
			t.Fatalf("retry: %v, want a StateError", err)
		}
	})
}

// A planner killed after the implementation run recorded its supersession
// and before the successor was published: planning again plans that very
// successor, bound to the chain before the supersession; once it exists
// and is PLANNED, planning again returns it.
func TestImplementedByInterrupted(t *testing.T) {
	f := newFixture(t, twoChecks)
	a := f.implementing(t)
	before, _ := Audit(a.Dir)
	lost := "20261201T131500.000Z-0badc0de" // the id the killed planner chose
	open, err := Open(f.state, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := open.supersedeImplementation(lost); err != nil {
		t.Fatal(err)
	}
	open.Close()
	b, err := f.planSuccessor(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != lost || b.Planned.ImplementedBy.Length != before.ChainLength || b.Planned.ImplementedBy.Head != before.ChainHead {
		t.Fatalf("resumed successor %s with %+v", b.ID, b.Planned.ImplementedBy)
	}
	b.Close()
	again, err := f.planSuccessor(a.ID)
	if err != nil || again.ID != lost {
		t.Fatalf("planning again: %v %v", again, err)
	}
	again.Close()
}

// The replay checks implemented_by's shape and the IMPLEMENTING →
// SUPERSEDED transition.
func TestImplementedByReplayRefusals(t *testing.T) {
	one := "version: 1\nname: t\ndefaults: {runtime: process}\nchecks:\n  - {id: a, run: ['true']}\n"
	good := func(p replay.PlannedData) *replay.ImplementedBy {
		return &replay.ImplementedBy{Run: "20261201T120000.000Z-00000001", Head: "sha256:" + strings.Repeat("a", 64), Length: 2,
			Source: replay.Source{Commit: p.Worktree.Commit, Tree: p.Worktree.Tree}, Contract: p.Contract.Hash}
	}
	for _, tc := range []struct {
		name   string
		reason replay.AuditReason
		edit   func(ib *replay.ImplementedBy, p *replay.PlannedData, run string)
		after  func(t *testing.T, l *eventlog.Log)
	}{
		{"own run", replay.ReasonBadEvent, func(ib *replay.ImplementedBy, _ *replay.PlannedData, run string) { ib.Run = run }, nil},
		{"run not an id", replay.ReasonBadEvent, func(ib *replay.ImplementedBy, _ *replay.PlannedData, _ string) { ib.Run = "../x" }, nil},
		{"head not a digest", replay.ReasonBadEvent, func(ib *replay.ImplementedBy, _ *replay.PlannedData, _ string) { ib.Head = "sha256:zz" }, nil},
		{"length 1", replay.ReasonBadEvent, func(ib *replay.ImplementedBy, _ *replay.PlannedData, _ string) { ib.Length = 1 }, nil},
		{"source not a commit", replay.ReasonBadEvent, func(ib *replay.ImplementedBy, _ *replay.PlannedData, _ string) { ib.Source.Commit = "HEAD" }, nil},
		{"another contract", replay.ReasonContract, func(ib *replay.ImplementedBy, _ *replay.PlannedData, _ string) {
			ib.Contract = "sha256:" + strings.Repeat("b", 64)
		}, nil},
		{"with supersedes", replay.ReasonBadEvent, func(_ *replay.ImplementedBy, p *replay.PlannedData, _ string) {
			p.Supersedes = "20261201T120000.000Z-00000002"
		}, nil},
		{"superseded without successor", replay.ReasonIllegalTransition, func(ib *replay.ImplementedBy, p *replay.PlannedData, _ string) { p.ImplementedBy = nil }, func(t *testing.T, l *eventlog.Log) {
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Implementing})
			mustAppend(t, l, replay.TypeState, replay.StateData{From: replay.Implementing, To: replay.Superseded})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, one)
			dir, planned, lg := emptyLog(t, f)
			ib := good(planned)
			planned.ImplementedBy = ib
			tc.edit(ib, &planned, lg.Binding().Run)
			mustAppend(t, lg, replay.TypePlanned, planned)
			if tc.after != nil {
				tc.after(t, lg)
			}
			lg.Close()
			if r := auditReason(t, dir); r != tc.reason {
				_, err := Audit(dir)
				t.Fatalf("reason %s (%v), want %s", r, err, tc.reason)
			}
		})
	}
}
