package run

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Plan with Implement records one state.changed PLANNED → IMPLEMENTING;
// Exec takes the run from there when no session is open.
func TestPlanImplement(t *testing.T) {
	f := newFixture(t, twoChecks)
	r, err := Plan(context.Background(), PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test", Implement: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st := r.State(); st != replay.Implementing {
		t.Fatalf("state %s", st)
	}
	ev := r.log.Events()
	if len(ev) != 2 || ev[1].Type != replay.TypeState {
		t.Fatalf("events %d, last %s", len(ev), ev[len(ev)-1].Type)
	}
	if _, err := r.AppendSession(replay.TypeState, replay.StateData{From: replay.Implementing, To: replay.Verifying}); err == nil {
		t.Fatal("AppendSession wrote a state change")
	}
	if err := r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st != replay.AwaitingApproval {
		t.Fatalf("after exec: %s", st)
	}
}

// A session event the replay refuses never reaches the log.
func TestAppendSessionRefusedBeforeWrite(t *testing.T) {
	f := newFixture(t, twoChecks)
	r, err := Plan(context.Background(), PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test", Implement: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := r.log.Len()
	_, err = r.AppendSession(replay.TypeTurnStarted, replay.TurnData{Session: "s-000000000001", Turn: "t-1"})
	if !replay.IsReason(err, replay.ReasonUnknownSession) {
		t.Fatalf("turn for an unknown session: %v", err)
	}
	if r.log.Len() != n {
		t.Fatal("a refused event was written")
	}
}

// OpenWait waits while a live owner holds the lock, and gives up at the
// deadline with the *lock.HeldError.
func TestOpenWait(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.plan(t)
	id := r.ID
	released := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		r.Close()
		close(released)
	}()
	t0 := time.Now()
	r2, err := OpenWait(f.state, id, 5*time.Second)
	if err != nil {
		t.Fatalf("OpenWait: %v", err)
	}
	<-released
	if time.Since(t0) < 250*time.Millisecond {
		t.Fatal("opened while the lock was held")
	}
	_, err = OpenWait(f.state, id, 200*time.Millisecond)
	var held *lock.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("OpenWait past its deadline: %v", err)
	}
	r2.Close()
}
