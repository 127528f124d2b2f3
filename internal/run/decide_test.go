package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// awaiting returns a closed run AWAITING_APPROVAL.
func (f *fixture) awaiting(t *testing.T) string {
	t.Helper()
	r := f.plan(t)
	defer r.Close()
	f.exec(t, r)
	if st := r.State(); st != replay.AwaitingApproval {
		t.Fatalf("state %s, want AWAITING_APPROVAL", st)
	}
	return r.ID
}

func (f *fixture) open(t *testing.T, id string) *Run {
	t.Helper()
	r, err := Open(f.state, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// decisionOnly records a decision the way a writer killed between its two
// appends left it (what 'approve' on earlier versions wrote before its
// state.changed): approval.recorded, and no state change.
func decisionOnly(t *testing.T, r *Run, decision, actor, reason string, next replay.State) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fold
	err := r.appendLocked(replay.TypeApproval, replay.ApprovalData{Decision: decision, Actor: actor, Reason: reason, State: next,
		VerificationDigest: f.VerificationDigest(), Source: replay.Source{Commit: f.Source().Commit, Tree: f.Source().Tree}, Contract: f.ContractHash()})
	if err != nil {
		t.Fatal(err)
	}
}

func countTypes(t *testing.T, dir string) map[string]int {
	t.Helper()
	events, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range events {
		n[e.Type]++
	}
	return n
}

// TestHalfDecisionIsCompletedByTheNextWriter: a decision whose state change
// is missing (the writer died in between) still replays as before, is
// reported as pending, and the next writer records the state change once;
// the same actor repeating the decision is told it is done, nothing is
// counted twice.
func TestHalfDecisionIsCompletedByTheNextWriter(t *testing.T) {
	for _, tc := range []struct {
		decision, actor, reason string
		next                    replay.State
		again                   DecisionOptions
	}{
		{"approved", "alice", "", replay.Complete, DecisionOptions{Actor: "alice"}},
		{"rejected", "carol", "no", replay.Rejected, DecisionOptions{Actor: "carol", Reject: true, Reason: "no"}},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			f := newFixture(t, twoChecks)
			id := f.awaiting(t)
			r := f.open(t, id)
			decisionOnly(t, r, tc.decision, tc.actor, tc.reason, tc.next)
			r.Close()
			dir := NewStore(f.state).Path(id)

			rep, err := Audit(dir)
			if err != nil || rep.State != replay.AwaitingApproval {
				t.Fatalf("replay of the half decision: %v, %v; want AWAITING_APPROVAL as before", rep, err)
			}
			r = f.open(t, id)
			if st := r.State(); st != tc.next {
				t.Fatalf("after open: %s, want %s", st, tc.next)
			}
			tc.again.Fresh = f.fresh()
			err = r.Decide(context.Background(), tc.again)
			var done *DecidedError
			if !errors.As(err, &done) || done.State != tc.next {
				t.Fatalf("the same decision again: %v, want a *DecidedError", err)
			}
			if err := r.Decide(context.Background(), DecisionOptions{Actor: "bob", Fresh: f.fresh()}); err == nil {
				t.Fatal("another actor decided on a finished run")
			}
			r.Close()
			rep, err = Audit(dir)
			if err != nil || rep.State != tc.next || len(rep.Decisions) != 1 {
				t.Fatalf("audit: %+v, %v", rep, err)
			}
			if n := countTypes(t, dir); n[replay.TypeApproval] != 1 || n[replay.TypeState] != 3 {
				t.Fatalf("events %v: want one decision and three state changes (VERIFYING, AWAITING_APPROVAL, the decision's)", n)
			}
		})
	}
}

// TestStatusCompletesAHalfDecision: status reports the pending state
// change, and records it when no writer holds the run.
func TestStatusCompletesAHalfDecision(t *testing.T) {
	f := newFixture(t, twoChecks)
	id := f.awaiting(t)
	r := f.open(t, id)
	decisionOnly(t, r, "approved", "alice", "", replay.Complete)
	st, err := Inspect(context.Background(), f.state, id, f.fresh())
	if err != nil || st.State != replay.AwaitingApproval || st.DecisionPending == nil || st.DecisionPending.To != replay.Complete {
		t.Fatalf("status while the writer lives: %+v, %v; want AWAITING_APPROVAL with the decision pending", st, err)
	}
	r.Close()
	st, err = Inspect(context.Background(), f.state, id, f.fresh())
	if err != nil || st.State != replay.Complete || st.DecisionPending != nil {
		t.Fatalf("status with no writer: %+v, %v; want COMPLETE", st, err)
	}
}

// TestOldLogsReplayAsBefore: histories that earlier writers could leave
// after a half decision (cancelled, or completed by a second approver)
// replay as they always did.
func TestOldLogsReplayAsBefore(t *testing.T) {
	f := newFixture(t, twoChecks)
	id := f.awaiting(t)
	r := f.open(t, id)
	defer r.Close()
	decisionOnly(t, r, "approved", "alice", "", replay.Complete)
	decisionOnly(t, r, "approved", "bob", "", replay.Complete)
	if err := r.transition(replay.Cancelled, replay.StateData{Actor: "ops", Reason: "stuck"}); err != nil {
		t.Fatal(err)
	}
	rep, err := Audit(r.Dir)
	if err != nil || rep.State != replay.Cancelled || len(rep.Decisions) != 2 {
		t.Fatalf("audit: %+v, %v", rep, err)
	}
}

// TestDamagedTailDoesNotBlockApprove: a log ending in a torn line, or in
// the torn remains of an interrupted repair, is recovered by the
// approval's own append, as every other writer does.
func TestDamagedTailDoesNotBlockApprove(t *testing.T) {
	for name, damage := range map[string]string{
		"torn":             `{"contract":"sha256:`,
		"torn-repair-torn": "{\"contract\":\n{\"contract\":\"sha256:00",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, twoChecks)
			id := f.awaiting(t)
			dir := NewStore(f.state).Path(id)
			ev, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ev.WriteString(damage); err != nil {
				t.Fatal(err)
			}
			ev.Close()
			st, err := Inspect(context.Background(), f.state, id, f.fresh())
			if err != nil || !st.TornTail || st.State != replay.AwaitingApproval {
				t.Fatalf("status: %+v, %v", st, err)
			}
			r := f.open(t, id)
			defer r.Close()
			if err := r.Decide(context.Background(), DecisionOptions{Actor: "alice", Fresh: f.fresh()}); err != nil {
				t.Fatalf("approve after a damaged tail: %v", err)
			}
			rep, err := Audit(dir)
			if err != nil || rep.State != replay.Complete {
				t.Fatalf("audit: %+v, %v", rep, err)
			}
			if n := countTypes(t, dir); n[eventlog.TypeRecovered] != 1 || n[replay.TypeApproval] != 1 {
				t.Fatalf("events %v: want one log.recovered and one decision", n)
			}
		})
	}
}

// An actor or reason that would not print as itself is refused by the
// kernel too, whoever calls it, and nothing is recorded.
func TestDecisionRefusesUnprintableText(t *testing.T) {
	f := newFixture(t, twoChecks)
	id := f.awaiting(t)
	r := f.open(t, id)
	defer r.Close()
	ctx := context.Background()
	before := r.Report().ChainLength
	for _, o := range []DecisionOptions{
		{Actor: "alice\ndecision approved by bob"},
		{Actor: "\x1b[2Jalice"},
		{Actor: "alice\u202e"},
		{Actor: "carol", Reject: true, Reason: "no\r\nreally"},
	} {
		var re *RefusedError
		if err := r.Decide(ctx, o); !errors.As(err, &re) {
			t.Errorf("%q/%q: %v, want a refusal", o.Actor, o.Reason, err)
		}
	}
	var re *RefusedError
	if err := r.Cancel("mallory\x07", "r"); !errors.As(err, &re) {
		t.Errorf("cancel: %v", err)
	}
	if got := r.Report().ChainLength; got != before || r.State() != replay.AwaitingApproval {
		t.Fatalf("something was recorded: %d events (was %d), %s", got, before, r.State())
	}
}
