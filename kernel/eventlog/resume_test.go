package eventlog_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

func suspended(t *testing.T, n int) (string, *eventlog.Log) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := eventlog.Create(path, eventlog.Binding{Run: "r1", Contract: "sha256:00"})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := l.Append("x.y", map[string]int{"n": 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Suspend(); err != nil {
		t.Fatal(err)
	}
	return path, l
}

// Resume returns exactly what another writer appended while suspended, and
// the next append chains onto it.
func TestResumeReadsAppended(t *testing.T) {
	path, l := suspended(t, 3)
	other, err := eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := other.Append("other.z", nil); err != nil {
			t.Fatal(err)
		}
	}
	other.Close()
	added, err := l.Resume()
	if err != nil || len(added) != 2 || added[1].Seq != 5 || added[0].Type != "other.z" {
		t.Fatalf("resume: %+v %v", added, err)
	}
	if _, err := l.Append("x.y", nil); err != nil {
		t.Fatal(err)
	}
	l.Suspend()
	if added, err := l.Resume(); err != nil || len(added) != 0 {
		t.Fatalf("resume with nothing appended: %v %v", added, err)
	}
	l.Close()
	evs, err := eventlog.ReadFile(path, nil)
	if err != nil || len(evs) != 6 {
		t.Fatalf("read back: %d %v", len(evs), err)
	}
}

// Every change Resume cannot prove harmless is ErrChanged: a shorter file,
// a rewritten last line, a torn tail, an appended line that does not chain.
func TestResumeRefusesChanged(t *testing.T) {
	for name, change := range map[string]func(b []byte) []byte{
		"shorter":   func(b []byte) []byte { return b[:len(b)-10] },
		"rewritten": func(b []byte) []byte { b[len(b)-5] ^= 1; return b },
		"torn":      func(b []byte) []byte { return append(b, `{"v":1,"se`...) },
		"replayed": func(b []byte) []byte {
			i := len(b) - 2
			for b[i] != '\n' {
				i--
			}
			return append(b, b[i+1:]...)
		},
		"garbage": func(b []byte) []byte { return append(b, "junk\n"...) },
	} {
		t.Run(name, func(t *testing.T) {
			path, l := suspended(t, 3)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, change(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if added, err := l.Resume(); !errors.Is(err, eventlog.ErrChanged) {
				t.Fatalf("resume: %v %v, want ErrChanged", added, err)
			}
			if _, err := l.Append("x.y", nil); err == nil {
				t.Fatal("appended after a refused resume")
			}
		})
	}
}

// indexSeq is the seq events.head.json beside path records.
func indexSeq(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), eventlog.HeadFile))
	if err != nil {
		t.Fatal(err)
	}
	var ix struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(b, &ix); err != nil {
		t.Fatal(err)
	}
	return ix.Seq
}

// Suspend rewrites the head index only once it lags by IndexLag events
// (a rename per hold cost a third of a governed call, ADR 0028); Close
// always does. A writer that opens the log while the index lags (its
// last writer killed mid-session) reads and verifies what follows the
// index and chains onto the real last event.
func TestSuspendLagsHeadIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := eventlog.Create(path, eventlog.Binding{Run: "r1", Contract: "sha256:00"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("x.y", nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := indexSeq(t, path); got != 1 {
		t.Fatalf("index after Close at seq 1: %d", got)
	}
	l, err = eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	hold := func() {
		t.Helper()
		if _, err := l.Resume(); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append("x.y", nil); err != nil {
			t.Fatal(err)
		}
		if err := l.Suspend(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Append("x.y", nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Suspend(); err != nil {
		t.Fatal(err)
	}
	for range eventlog.IndexLag - 2 {
		hold()
	}
	if got := indexSeq(t, path); got != 1 {
		t.Fatalf("index after %d suspended events: seq %d, want 1 (lagging)", eventlog.IndexLag-1, got)
	}
	hold()
	if got, want := indexSeq(t, path), uint64(1+eventlog.IndexLag); got != want {
		t.Fatalf("index after %d suspended events: seq %d, want %d", eventlog.IndexLag, got, want)
	}
	hold() // lags again by one; the writer is never closed (killed)
	other, err := eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e, err := other.Append("other.z", nil)
	if err != nil || e.Seq != uint64(eventlog.IndexLag+3) {
		t.Fatalf("append after a lagging index: %+v %v", e, err)
	}
	other.Close()
	if got := indexSeq(t, path); got != e.Seq {
		t.Fatalf("index after Close: %d, want %d", got, e.Seq)
	}
	if evs, err := eventlog.ReadFile(path, nil); err != nil || len(evs) != eventlog.IndexLag+3 {
		t.Fatalf("read back: %d %v", len(evs), err)
	}
}
