package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestSealChild is the process the seal crash tests kill: 40 appends to
// the log at PG_EVENTLOG_SEAL with 1 KiB segments.
func TestSealChild(t *testing.T) {
	path := os.Getenv("PG_EVENTLOG_SEAL")
	if path == "" {
		t.Skip("the seal crash tests' child")
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n := l.Len()
	for i := n; i < n+40; i++ {
		if _, err := l.Append("check.finished", map[string]any{"i": i, "note": "segment padding of some length"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
}

// kill -9 after every step of a seal, and at every append boundary around
// seals: every reader reads the log back whole (each event once, in order,
// none lost that was durable), and the next writer finishes the seal and
// continues the chain.
func TestCrashDuringSeal(t *testing.T) {
	var hooks []string
	for k := 1; k <= 4; k++ {
		for n := 1; n <= 2; n++ {
			hooks = append(hooks, fmt.Sprintf("seal%d:%d", k, n))
		}
	}
	for _, when := range []string{"before", "torn", "after"} {
		for n := 2; n <= 14; n += 3 {
			hooks = append(hooks, fmt.Sprintf("%s:%d", when, n))
		}
	}
	for _, hook := range hooks {
		t.Run(hook, func(t *testing.T) {
			path := segLog(t, testBinding, "1KiB", 2)
			cmd := exec.Command(os.Args[0], "-test.run=^TestSealChild$")
			cmd.Env = append(os.Environ(), "PG_EVENTLOG_SEAL="+path, CrashEnv+"="+hook)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child was not killed: %v\n%s", err, out)
			}
			ns, _ := sealed(path)
			if hook[:4] == "seal" && len(ns) == 0 {
				t.Fatal("the child sealed nothing")
			}
			mid := hook[:4] == "seal" && hook[4] != '4'
			if len(ns) > 0 && mid != duplicate(seg(path, len(ns)), mustStat(t, path), path) {
				t.Fatalf("after %s the active file is the last segment: %v", hook, !mid)
			}
			m := readsWhole(t, path, hook)
			l, err := Open(path)
			if err != nil {
				t.Fatalf("open after the kill: %v", err)
			}
			if l.Len() != m {
				t.Fatalf("open: %d events, readers %d", l.Len(), m)
			}
			if _, err := l.Append("z", nil); err != nil {
				t.Fatal(err)
			}
			l.Close()
			files, _ := Files(path)
			if len(files) > 1 && duplicate(files[len(files)-2], mustStat(t, path), path) {
				t.Fatal("the writer left the active file a copy of the last segment")
			}
			s, err := VerifyPath(path, &testBinding)
			if err != nil || s.Len < m+1 {
				t.Fatalf("after the next append: %+v %v", s, err)
			}
			// the repair's log.recovered names the line across the chain:
			// the concatenation (a bundle's member) verifies too
			if cs := verifyOK(t, chainBytes(t, path), &testBinding); cs.Len != s.Len || len(cs.Recovered) != len(s.Recovered) {
				t.Fatalf("chain stream %+v, by path %+v", cs, s)
			}
		})
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// readsWhole checks that VerifyPath, ReadFile and OpenChain agree and that
// the events are those written, each once; it returns their number.
func readsWhole(t *testing.T, path, hook string) int {
	t.Helper()
	evs, err := ReadFile(path, &testBinding)
	var ce *ChainError
	torn := errors.As(err, &ce) && ce.Reason == TornTail && ce.File == "events.ndjson"
	if err != nil && !torn {
		t.Fatalf("%s: ReadFile: %v", hook, err)
	}
	s, _ := VerifyPath(path, &testBinding)
	rc, err := OpenChain(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !torn {
		if got := verifyOK(t, b, &testBinding); got.Len != len(evs) || got.Head != s.Head {
			t.Fatalf("OpenChain reads %d events, ReadFile %d", got.Len, len(evs))
		}
	} else if in, ok := Intact(b); !ok || verifyOK(t, in, &testBinding).Len != len(evs) {
		t.Fatal("OpenChain's torn tail is not the active file's")
	}
	for i, e := range evs[2:] {
		var d struct{ I int }
		json.Unmarshal(e.Data, &d)
		if d.I != i+2 {
			t.Fatalf("event %d holds i=%d: an event lost or read twice", i+3, d.I)
		}
	}
	if s.Len != len(evs) || bytes.Count(b, []byte{'\n'}) < len(evs) {
		t.Fatalf("VerifyPath %d, ReadFile %d", s.Len, len(evs))
	}
	return len(evs)
}
