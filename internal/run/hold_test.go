package run

import (
	"context"
	"github.com/proofgate/proofgate/kernel/replay"
	"testing"
)

// A held approval (DecisionOptions.Hold) reaches approval.required (1 in
// twoChecks) without completing the run; the next approval completes it,
// and the replay credits both. A run left with only held approvals (the
// writer died before the last) stays AWAITING_APPROVAL for every reader:
// holding never completes anything.
func TestHeldApprovalsCompleteWithTheLast(t *testing.T) {
	f := newFixture(t, twoChecks)
	id := f.awaiting(t)
	r := f.open(t, id)
	if err := r.Decide(context.Background(), DecisionOptions{Actor: "alice", Hold: true, Fresh: f.fresh()}); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st != replay.AwaitingApproval {
		t.Fatalf("after a held approval: %s, want AWAITING_APPROVAL", st)
	}
	r.Close()
	dir := NewStore(f.state).Path(id)
	if rep, err := Audit(dir); err != nil || rep.State != replay.AwaitingApproval || len(rep.Decisions) != 1 {
		t.Fatalf("replay of a held approval: %+v, %v", rep, err)
	}
	r = f.open(t, id) // a new writer records no state change for it
	if st := r.State(); st != replay.AwaitingApproval {
		t.Fatalf("after reopening: %s", st)
	}
	if err := r.Decide(context.Background(), DecisionOptions{Actor: "alice", Fresh: f.fresh()}); err == nil {
		t.Fatal("alice approved twice")
	}
	if err := r.Decide(context.Background(), DecisionOptions{Actor: "bob", Fresh: f.fresh()}); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st != replay.Complete {
		t.Fatalf("after the last approval: %s, want COMPLETE", st)
	}
	r.Close()
	rep, err := Audit(dir)
	if err != nil || rep.State != replay.Complete || len(rep.Decisions) != 2 {
		t.Fatalf("audit: %+v, %v", rep, err)
	}
	if n := countTypes(t, dir); n[replay.TypeApproval] != 2 || n[replay.TypeState] != 3 {
		t.Fatalf("events %v: want two decisions and one completing state change", n)
	}
}

// A held rejection does not exist: Hold never keeps a rejection from
// rejecting the run.
func TestHoldDoesNotHoldARejection(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.open(t, f.awaiting(t))
	defer r.Close()
	if err := r.Decide(context.Background(), DecisionOptions{Actor: "carol", Reject: true, Reason: "no", Hold: true, Fresh: f.fresh()}); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st != replay.Rejected {
		t.Fatalf("a held rejection: %s, want REJECTED", st)
	}
}
