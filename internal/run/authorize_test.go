package run

import (
	"context"
	"errors"
	"github.com/proofgate/proofgate/kernel/replay"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const authorizeRequired = twoChecks + "authorization: {required: true}\n"

func (f *fixture) authorize(t *testing.T, id string, o AuthorizeOptions) error {
	t.Helper()
	r := f.open(t, id)
	defer r.Close()
	o.Fresh = f.fresh()
	return r.Authorize(context.Background(), o)
}

func (f *fixture) stateOf(t *testing.T, id string) replay.State {
	t.Helper()
	rep, err := Audit(NewStore(f.state).Path(id))
	if err != nil {
		t.Fatal(err)
	}
	return rep.State
}

// With authorization required, the approval holds the run at
// AWAITING_APPROVAL and the authorization completes it; the other order
// completes it too, at the approval. A rejected authorization completes
// nothing and withholds its target.
func TestAuthorizeRequiredComposesWithApproval(t *testing.T) {
	ctx := context.Background()
	t.Run("approval first", func(t *testing.T) {
		f := newFixture(t, authorizeRequired)
		id := f.awaiting(t)
		r := f.open(t, id)
		if err := r.Decide(ctx, DecisionOptions{Actor: "alice", Fresh: f.fresh()}); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if st := f.stateOf(t, id); st != replay.AwaitingApproval {
			t.Fatalf("after the approval: %s, want AWAITING_APPROVAL (authorization required)", st)
		}
		if err := f.authorize(t, id, AuthorizeOptions{Target: "jira:OPS-1", Actor: "bob", Reject: true, Reason: "not yet"}); err != nil {
			t.Fatal(err)
		}
		if st := f.stateOf(t, id); st != replay.AwaitingApproval {
			t.Fatalf("after a rejected authorization: %s, want AWAITING_APPROVAL", st)
		}
		// Another actor approving the rejected target does not authorize it.
		if err := f.authorize(t, id, AuthorizeOptions{Target: "jira:OPS-1", Actor: "carol"}); err != nil {
			t.Fatal(err)
		}
		if st := f.stateOf(t, id); st != replay.AwaitingApproval {
			t.Fatalf("a rejected target authorized again: %s", st)
		}
		if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: "carol"}); err != nil {
			t.Fatal(err)
		}
		rep, err := Audit(NewStore(f.state).Path(id))
		if err != nil {
			t.Fatal(err)
		}
		if rep.State != replay.Complete || len(rep.Authorizations) != 3 {
			t.Fatalf("state %s with %d authorizations, want COMPLETE with 3", rep.State, len(rep.Authorizations))
		}
	})
	t.Run("authorization first", func(t *testing.T) {
		f := newFixture(t, authorizeRequired)
		id := f.awaiting(t)
		if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: "carol"}); err != nil {
			t.Fatal(err)
		}
		if st := f.stateOf(t, id); st != replay.AwaitingApproval {
			t.Fatalf("an authorization without approvals: %s", st)
		}
		r := f.open(t, id)
		defer r.Close()
		if err := r.Decide(ctx, DecisionOptions{Actor: "alice", Fresh: f.fresh()}); err != nil {
			t.Fatal(err)
		}
		if st := r.State(); st != replay.Complete {
			t.Fatalf("approval after the authorization: %s, want COMPLETE", st)
		}
	})
}

// Without the requirement an authorization never moves the run and can be
// recorded after COMPLETE; repeats and reversals are told apart.
func TestAuthorizeNotRequired(t *testing.T) {
	f := newFixture(t, twoChecks)
	dir := f.complete(t)
	id := filepath.Base(dir)
	if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: "carol"}); err != nil {
		t.Fatal(err)
	}
	var done *DecidedError
	if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: "Carol"}); !errors.As(err, &done) {
		t.Fatalf("repeat: %v, want *DecidedError", err)
	}
	var re *RefusedError
	if err := f.authorize(t, id, AuthorizeOptions{Target: "deploy/prod", Actor: "carol", Reject: true, Reason: "x"}); !errors.As(err, &re) {
		t.Fatalf("reversal: %v, want *RefusedError", err)
	}
	if st := f.stateOf(t, id); st != replay.Complete {
		t.Fatalf("state %s", st)
	}
}

// Hostile: bad input, wrong states, a stale source (before and after
// COMPLETE) and a tampered projection are refused with typed errors.
func TestAuthorizeRefuses(t *testing.T) {
	var re *RefusedError
	f := newFixture(t, authorizeRequired)
	id := f.awaiting(t)
	for _, o := range []AuthorizeOptions{
		{Target: "deploy/prod"},
		{Target: "", Actor: "a"},
		{Target: "has space", Actor: "a"},
		{Target: "x", Actor: "a", Reject: true},
		{Target: "x", Actor: "a\x1b[31m"},
	} {
		if err := f.authorize(t, id, o); !errors.As(err, &re) {
			t.Errorf("%+v: %v, want *RefusedError", o, err)
		}
	}

	// Tampered projection: run.json's checks no longer digest to the log's.
	p := filepath.Join(NewStore(f.state).Path(id), RunFile)
	b, _ := os.ReadFile(p)
	bad := strings.Replace(string(b), `"exit_code": 0`, `"exit_code": 7`, 1)
	if bad == string(b) {
		t.Fatal("tamper did not apply")
	}
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := Open(f.state, id); err == nil {
		err = r.Authorize(context.Background(), AuthorizeOptions{Target: "x", Actor: "a", Fresh: f.fresh()})
		r.Close()
		var ae *replay.AuditError
		if !errors.As(err, &ae) {
			t.Fatalf("tampered run.json: %v, want *AuditError", err)
		}
	} else {
		var ae *replay.AuditError
		if !errors.As(err, &ae) {
			t.Fatalf("tampered run.json: open: %v, want *AuditError", err)
		}
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}

	// Stale source: an edit moves an AWAITING_APPROVAL run to STALE.
	if err := os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var se *StaleError
	if err := f.authorize(t, id, AuthorizeOptions{Target: "x", Actor: "a"}); !errors.As(err, &se) {
		t.Fatalf("stale: %v, want *StaleError", err)
	}
	if st := f.stateOf(t, id); st != replay.Stale {
		t.Fatalf("state %s, want STALE", st)
	}
	var ste *StateError
	if err := f.authorize(t, id, AuthorizeOptions{Target: "x", Actor: "a"}); !errors.As(err, &ste) {
		t.Fatalf("STALE run: %v, want *StateError", err)
	}
}

// A COMPLETE run whose source changed is refused (it cannot move to STALE).
func TestAuthorizeCompleteStale(t *testing.T) {
	f := newFixture(t, twoChecks)
	id := filepath.Base(f.complete(t))
	if err := os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var se *StaleError
	if err := f.authorize(t, id, AuthorizeOptions{Target: "x", Actor: "a"}); !errors.As(err, &se) {
		t.Fatalf("stale COMPLETE: %v, want *StaleError", err)
	}
	if st := f.stateOf(t, id); st != replay.Complete {
		t.Fatalf("state %s", st)
	}
}

// The replay refuses a COMPLETE the requirement does not allow and an
// authorization that claims the wrong state.
func TestAuthorizeReplayRefusesForgedComplete(t *testing.T) {
	f := newFixture(t, authorizeRequired)
	id := f.awaiting(t)
	r := f.open(t, id)
	defer r.Close()
	// An approval that claims to complete the run although no target is
	// authorized: the kernel's own replay refuses to append it.
	r.mu.Lock()
	fd := r.fold
	err := r.appendLocked(replay.TypeApproval, replay.ApprovalData{Decision: "approved", Actor: "alice", State: replay.Complete,
		VerificationDigest: fd.VerificationDigest(), Source: replay.Source{Commit: fd.Source().Commit, Tree: fd.Source().Tree}, Contract: fd.ContractHash()})
	r.mu.Unlock()
	var ae *replay.AuditError
	if !errors.As(err, &ae) || ae.Reason != replay.ReasonDecision {
		t.Fatalf("forged COMPLETE: %v, want an AuditError with reason decision", err)
	}
}
