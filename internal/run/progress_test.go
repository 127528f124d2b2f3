package run

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// recorder is a Progress that keeps every call, in order.
type recorder struct {
	mu     sync.Mutex
	events []string
	beats  map[string][]int64 // check -> output bytes per heartbeat
	last   map[string]time.Duration
	took   map[string]time.Duration
	bad    []string
}

func (r *recorder) Started(c, _ string) { r.add("start " + c) }

func (r *recorder) Running(c string, elapsed time.Duration, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if elapsed <= r.last[c] {
		r.bad = append(r.bad, fmt.Sprintf("%s: elapsed %s after %s", c, elapsed, r.last[c]))
	}
	r.last[c] = elapsed
	r.beats[c] = append(r.beats[c], n)
	r.events = append(r.events, "running "+c)
}

func (r *recorder) Finished(c string, o runtime.Outcome, d time.Duration, detail string) {
	r.mu.Lock()
	r.took[c] = d
	r.mu.Unlock()
	r.add(fmt.Sprintf("%s %s", o, c))
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func TestExecProgressHeartbeat(t *testing.T) {
	f := newFixture(t, `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: slow, run: [sh, -c, 'printf hello; sleep 1.5']}
  - {id: bad, run: ['false']}
  - {id: after-bad, run: ['true'], depends_on: [bad]}
approval: {required: 1}
`)
	r := f.plan(t)
	defer r.Close()
	rec := &recorder{beats: map[string][]int64{}, last: map[string]time.Duration{}, took: map[string]time.Duration{}}
	err := r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 2,
		Runtimes: map[string]runtime.Runtime{"process": process.New()}, Progress: rec, Heartbeat: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bad) > 0 {
		t.Fatal(rec.bad)
	}
	// A 1.5 s check beats every 0.5 s it runs (at least at 0.5 s and 1 s),
	// with the 5 bytes it printed first, and never after it finished.
	beats := rec.beats["slow"]
	if len(beats) < 2 || time.Duration(len(beats))*500*time.Millisecond > rec.took["slow"]+100*time.Millisecond || beats[len(beats)-1] != 5 {
		t.Fatalf("heartbeats of slow: %v (events %v)", beats, rec.events)
	}
	order := map[string]int{} // event -> index of its last occurrence
	firstBeat := -1
	for i, e := range rec.events {
		order[e] = i
		if e == "running slow" && firstBeat < 0 {
			firstBeat = i
		}
	}
	if !(order["start slow"] < firstBeat && order["running slow"] < order["passed slow"]) {
		t.Fatalf("slow's events out of order: %v", rec.events)
	}
	if _, ok := order["failed bad"]; !ok {
		t.Fatalf("no finish for bad: %v", rec.events)
	}
	if _, started := order["start after-bad"]; started || order["skipped after-bad"] == 0 {
		t.Fatalf("after-bad should be skipped without starting: %v", rec.events)
	}
	if len(rec.beats["bad"]) != 0 {
		t.Fatalf("a check that ended at once beat: %v", rec.beats["bad"])
	}
}
