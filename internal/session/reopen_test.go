package session_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// A session re-takes the run it released (run.Reopen) and reads only what
// was appended since. These cases change the log between two holds.

func (f *fixture) logPath() string { return filepath.Join(f.dir(), run.EventsFile) }

func readLog(t *testing.T, f *fixture) []byte {
	t.Helper()
	b, err := os.ReadFile(f.logPath())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An approval recorded by another writer (its own Open, as `proofgate tool
// approve` does) while the recorder holds no lock is seen by the next call,
// which runs the approved action; the log stays one chain.
func TestReopenSeesConcurrentApproval(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	call(t, s, "greet", `{"name":"a"}`)
	pend := call(t, s, "deploy", `{"env":"prod"}`)
	if pend.Status != session.PendingApproval {
		t.Fatalf("deploy: %+v", pend)
	}
	done := make(chan error)
	go func() { done <- session.Approve(f.opts(""), pend.Action, "alice") }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	res := call(t, s, "deploy", `{"env":"prod"}`)
	if res.Status != session.Finished || res.Result != "success" || res.Action != pend.Action {
		t.Fatalf("approved deploy after another writer's approval: %+v", res)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	if _, err := run.VerifyLog(f.dir()); err != nil {
		t.Fatalf("chain after the interleaved approval: %v", err)
	}
	f.audit(t)
}

// The log cut back to an earlier line boundary between holds (a valid but
// shorter chain): the next hold must chain onto the file's real last line,
// not the head it cached, so the log still verifies.
func TestReopenTruncatedLog(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	call(t, s, "greet", `{"name":"a"}`)
	call(t, s, "greet", `{"name":"b"}`)
	b := readLog(t, f)
	cut := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
	if err := os.Truncate(f.logPath(), int64(cut)); err != nil {
		t.Fatal(err)
	}
	call(t, s, "greet", `{"name":"c"}`)
	sum, err := run.VerifyLog(f.dir())
	if err != nil {
		t.Fatalf("a hold after truncation chained onto a stale head: %v", err)
	}
	if !bytes.HasPrefix(readLog(t, f), b[:cut]) {
		t.Fatal("the kept prefix changed")
	}
	if ev := f.events(t); sum.Len != len(ev) || ev[len(ev)-1].Type != "tool.finished" {
		t.Fatalf("after truncation: %d events, last %s", sum.Len, ev[len(ev)-1].Type)
	}
}

// The last line rewritten in place (same length) between holds: the next
// hold does not chain onto it; it refuses as a full Open does, with the
// log's typed reason, and appends nothing.
func TestReopenRewrittenLastLine(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	call(t, s, "greet", `{"name":"a"}`)
	b := readLog(t, f)
	i := bytes.LastIndex(b, []byte(`"time":"`)) + len(`"time":"`)
	b[i+3]++ // 2026 → 2027 (or another digit)
	if err := os.WriteFile(f.logPath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(`{"name":"b"}`)})
	var ce *eventlog.ChainError
	if !errors.As(err, &ce) || ce.Reason != eventlog.BrokenLink {
		t.Fatalf("call after the last line was rewritten: %v, want a broken-link *ChainError", err)
	}
	if got := readLog(t, f); !bytes.Equal(got, b) {
		t.Fatalf("the refused hold wrote to the log (%d bytes, was %d)", len(got), len(b))
	}
	if _, err := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(`{"name":"c"}`)}); !errors.As(err, &ce) {
		t.Fatalf("second call after the rewrite: %v", err)
	}
}

// A line appended by a foreign writer that does not chain (a forged
// approval with a made-up prev) is refused, not applied.
func TestReopenForgedAppend(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	call(t, s, "greet", `{"name":"a"}`)
	b := readLog(t, f)
	last := b[bytes.LastIndexByte(b[:len(b)-1], '\n')+1:]
	fh, err := os.OpenFile(f.logPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write(last) // the same line again: seq and prev do not follow
	fh.Close()
	_, err = s.Call(ctx, session.Call{Tool: "greet", Args: []byte(`{"name":"b"}`)})
	var ce *eventlog.ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("call after a replayed line was appended: %v, want *ChainError", err)
	}
}

// A torn tail left between holds (a writer killed mid-append) is handled as
// Open handles it: the next hold records log.recovered and chains on.
func TestReopenTornTail(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	call(t, s, "greet", `{"name":"a"}`)
	fh, err := os.OpenFile(f.logPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"v":1,"seq":99,"run":"torn`)
	fh.Close()
	res := call(t, s, "greet", `{"name":"b"}`)
	if res.Status != session.Finished {
		t.Fatalf("call after a torn tail: %+v", res)
	}
	sum, err := run.VerifyLog(f.dir())
	if err != nil || len(sum.Recovered) != 1 {
		t.Fatalf("after a torn tail: %+v %v, want one recovered region", sum, err)
	}
	var recovered int
	for _, e := range f.events(t) {
		if e.Type == eventlog.TypeRecovered {
			recovered++
		}
	}
	if recovered != 1 {
		t.Fatalf("%d log.recovered events, want 1", recovered)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	f.audit(t)
}
