package retention_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
)

// Hostile: a prune racing live runs on the same state directory. Runs are
// planned, executed and decided while an apply archives and reclaims; a
// run held by a live writer is never archived; afterwards every run
// verifies and every blob its log names is there.
func TestPruneRacesLiveRuns(t *testing.T) {
	f := newFixture(t)
	for range 4 {
		f.complete()
	}
	held := f.planned(run.PlanOptions{})
	f.exec(held)
	if err := held.Decide(context.Background(), run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: f.repo, StateDir: f.state}}); err != nil {
		t.Fatal(err)
	}
	// held is COMPLETE and old enough, but its writer still holds it.
	old := f.blob(held.ID, "unnamed, in a held run", 2*time.Hour)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var live []string
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := f.complete()
			mu.Lock()
			live = append(live, id)
			mu.Unlock()
		}
	}()
	// Blob ages by the real clock (live blobs are seconds old; blob_min_age
	// is 1h): only run ages use the clock 40 days ahead.
	s := settings(t)
	s.BlobMinAge.Value = 41 * 24 * time.Hour
	var results []*retention.Result
	for range 3 {
		res, err := retention.Apply(context.Background(), f.state, retention.Options{Settings: s, Now: later, UnsafeShortSettle: true})
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		results = append(results, res)
	}
	close(stop)
	wg.Wait()
	held.Close()
	archived := 0
	for _, r := range results {
		for _, a := range r.Archived {
			if a.Run == held.ID {
				t.Fatal("archived a run a live writer held")
			}
		}
		archived += len(r.Archived)
	}
	if archived < 4 || len(live) == 0 {
		t.Fatalf("archived %d runs while %d live runs completed", archived, len(live))
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("a blob of a locked run was reclaimed: %v", err)
	}
	ids, _ := run.NewStore(f.state).List()
	for _, id := range ids {
		if _, err := run.Audit(f.dir(id)); err != nil && !strings.Contains(err.Error(), "lagging") {
			t.Errorf("run %s: %v", id, err)
		}
	}
	if probs, err := retention.Problems(f.state); err != nil || len(probs) > 0 {
		t.Fatalf("problems %v %v", probs, err)
	}
	// The prune lock is free again; an Apply while another holds it is
	// refused.
	if _, err := os.Stat(f.state + "/" + retention.PruneLock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("prune lock left: %v", err)
	}
	lk, err := lock.Acquire(f.state + "/" + retention.PruneLock)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	if _, err := retention.Apply(context.Background(), f.state, retention.Options{Settings: s, Now: later, UnsafeShortSettle: true}); !retention.IsReason(err, retention.ReasonBusy) {
		t.Fatalf("apply while another holds the prune lock: %v", err)
	}
}

// What a prune writes beside runs/ is harness state, never the work tree a
// run binds: its log's segments, head index and temporary files, the prune
// lock with its kept owner files and the archive directory leave a plan
// clean (the race above once caught a head index temp file mid-write).
func TestPruneFilesLeaveTheTreeClean(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"prune-log.ndjson", "prune-log.00000001.ndjson", "prune-log.head.json",
		".prune-log.head.json.tmp-609738777", "prune.lock", "prune.lock.4242.0a1b2c3d.tmp", "archive/x.tar.gz"} {
		p := filepath.Join(f.state, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := f.planned(run.PlanOptions{})
	r.Close()
	// A file of the same shape outside the state directory still counts.
	if err := os.WriteFile(filepath.Join(f.repo, ".prune-log.head.json.tmp-1"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test"})
	var dirty *run.DirtyError
	if !errors.As(err, &dirty) {
		t.Fatalf("plan with a stray file in the repository: %v, want a DirtyError", err)
	}
}
