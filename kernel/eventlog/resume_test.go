package eventlog_test

import (
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
