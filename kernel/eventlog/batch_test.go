package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/proofgate/proofgate/internal/durable"
)

// A staged batch is one write and one fsync; every event of it is chained
// and visible (Len, Head) before Flush, on disk after it.
func TestStageFlushOneFsync(t *testing.T) {
	path, _ := newLog(t, testBinding, 2)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before := durable.Syncs()
	for i := range 3 {
		if _, err := l.Stage("x", map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	if l.Len() != 5 {
		t.Fatalf("Len %d after staging, want 5", l.Len())
	}
	if got, _ := os.ReadFile(path); verifyOK(t, got, nil).Len != 2 {
		t.Fatal("staged events reached the file before Flush")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := durable.Syncs() - before; n != 1 {
		t.Fatalf("%d fsyncs for a batch of 3, want 1", n)
	}
	if err := l.Flush(); err != nil || durable.Syncs()-before != 1 {
		t.Fatalf("an empty Flush: %v, %d fsyncs", err, durable.Syncs()-before)
	}
	got, _ := os.ReadFile(path)
	if s := verifyOK(t, got, nil); s.Len != 5 || s.Head != l.Head() {
		t.Fatalf("summary %+v, head %s", s, l.Head())
	}
	// Close flushes what is still staged.
	if _, err := l.Stage("y", nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if s := verifyOK(t, got, nil); s.Len != 6 {
		t.Fatalf("after Close: %+v", s)
	}
}

// TestBatchChild is the process the crash tests kill: two batches (3, 2).
func TestBatchChild(t *testing.T) {
	path := os.Getenv("PG_EVENTLOG_BATCH")
	if path == "" {
		t.Skip("the crash tests' child")
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 2} {
		for i := range n {
			if _, err := l.Stage("x", map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// kill -9 at every event of two batches (before it, torn, after it): every
// complete line before the kill is kept and verifies, a torn tail is
// reported and recovered by the next append, exactly as for one event.
func TestCrashInBatch(t *testing.T) {
	kills := 0
	for _, when := range []string{"before", "torn", "after"} {
		for n := 1; n <= 5; n++ {
			t.Run(fmt.Sprintf("%s-%d", when, n), func(t *testing.T) {
				path, raw := newLog(t, testBinding, 2)
				cmd := exec.Command(os.Args[0], "-test.run=^TestBatchChild$")
				cmd.Env = append(os.Environ(), "PG_EVENTLOG_BATCH="+path, fmt.Sprintf("%s=%s:%d", CrashEnv, when, n))
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("child was not killed: %v\n%s", err, out)
				}
				kills++
				got, _ := os.ReadFile(path)
				if !bytes.HasPrefix(got, raw) {
					t.Fatal("the events before the batch changed")
				}
				complete := 2 + n - 1 // events durable before the n-th
				if when == "after" {
					complete++
				}
				l, err := Open(path)
				if err != nil {
					t.Fatalf("open after the kill: %v", err)
				}
				if l.Len() != complete || l.Damaged() != (when == "torn") {
					t.Fatalf("len %d damaged %v, want %d complete events", l.Len(), l.Damaged(), complete)
				}
				if _, err := l.Append("z", nil); err != nil {
					t.Fatal(err)
				}
				l.Close()
				got, _ = os.ReadFile(path)
				s := verifyOK(t, got, nil)
				wantRec := []int(nil)
				extra := 1
				if when == "torn" {
					wantRec, extra = []int{complete + 1}, 2
				}
				if s.Len != complete+extra || !slices.Equal(s.Recovered, wantRec) {
					t.Fatalf("after recovery %+v, want %d events, recovered %v", s, complete+extra, wantRec)
				}
			})
		}
	}
	if kills != 15 {
		t.Fatalf("%d kills, want 15", kills)
	}
}
