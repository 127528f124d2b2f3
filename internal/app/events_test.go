package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/kernel/exit"
)

// trusted is a signing key and a trust store file that trusts it.
func trusted(t *testing.T) (*keytest.Key, string) {
	t.Helper()
	k := keytest.New(t)
	s := trust.New()
	if _, err := s.Add(k.PubPEM, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "trust.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	return k, path
}

// A run's log verifies, and against the checkpoint signed of it; a
// checkpoint without a trust store is unusable input (usage) beside a
// refused result; a log altered after the checkpoint is refused.
func TestVerifyEventsAndCheckpoint(t *testing.T) {
	state, r := executed(t)
	r.Close()
	res, err := VerifyEvents(state, "latest", "", "")
	if err != nil || !res.OK || res.RunID != r.ID || res.Length == 0 || len(res.Proved) != 2 {
		t.Fatalf("verify %+v, %v", res, err)
	}
	k, ts := trusted(t)
	rec, err := CheckpointRun(r.ID, CheckpointOptions{State: state, Signer: k.Signer, Now: time.Now()})
	if err != nil || rec.Length != res.Length {
		t.Fatalf("checkpoint %+v, %v", rec, err)
	}
	res, err = VerifyEvents(state, r.ID, rec.Path, ts)
	if err != nil || !res.OK || res.Checkpoint == nil || res.Checkpoint.Length != rec.Length || len(res.Proved) != 3 {
		t.Fatalf("verify against the checkpoint %+v, %v", res, err)
	}
	if res, err := VerifyEvents(state, r.ID, rec.Path, ""); class(err) != exit.Usage || res == nil || res.OK {
		t.Fatalf("no trust store: %+v, %v", res, err)
	}
	if res, err := VerifyEvents(state, "nope", "", ""); res != nil || err == nil {
		t.Fatalf("an unknown run: %+v, %v", res, err)
	}
	ev := filepath.Join(r.Dir, "events.ndjson")
	b, _ := os.ReadFile(ev)
	os.Chmod(ev, 0o644)
	os.WriteFile(ev, []byte(strings.Replace(string(b), `"b"`, `"c"`, 1)), 0o644)
	if res, err := VerifyEvents(state, r.ID, "", ""); err != nil || res.OK || res.Reason == "" || res.Proved != nil {
		t.Fatalf("a tampered log: %+v, %v", res, err)
	}
}

// A state checkpoint covers every run of its repository and is refused
// for another one. A run without a lock is not unlocked (refused).
func TestStateCheckpoint(t *testing.T) {
	state, r := executed(t)
	r.Close()
	ctx := context.Background()
	repo, err := RootRepository(ctx, filepath.Dir(state), "o/n")
	if err != nil || repo.Root == "" || repo.ID != "o/n" {
		t.Fatalf("repository %+v, %v", repo, err)
	}
	if _, err := RootRepository(ctx, t.TempDir(), ""); class(err) != exit.Usage {
		t.Fatalf("no repository: %v", err)
	}
	k, ts := trusted(t)
	rec, err := CheckpointState(repo, CheckpointOptions{State: state, Signer: k.Signer, Now: time.Now()})
	if err != nil || len(rec.Runs) != 1 {
		t.Fatalf("state checkpoint %+v, %v", rec, err)
	}
	res, err := VerifyStateChains(state)
	if err != nil || !res.OK || len(res.Runs) != 1 {
		t.Fatalf("chains %+v, %v", res, err)
	}
	if err := res.CheckCheckpoint(state, repo, rec.Path, ts); err != nil || !res.OK || res.Checkpoint == nil || res.Checkpoint.Runs != 1 {
		t.Fatalf("check %+v, %v", res, err)
	}
	other := repo
	other.ID = "o/fork"
	if err := res.CheckCheckpoint(state, other, rec.Path, ts); err != nil || res.OK || res.Reason == "" {
		t.Fatalf("another repository: %+v, %v", res, err)
	}
	if _, err := Unlock(state, r.ID, "ops", 0, time.Now()); class(err) != exit.Refused {
		t.Fatalf("unlock without a lock: %v", err)
	}
}
