package session_test

import (
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
)

// priorCalls appends n earlier blocked calls of session sid (tool.requested
// and the policy's tool.decided, the wipe tool, one input) in one lock
// hold: a session that made n calls, built in a second instead of n
// governed calls.
func (f *fixture) priorCalls(tb testing.TB, sid string, n int) {
	tb.Helper()
	r, err := run.Open(f.state, f.id)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := r.Close(); err != nil {
			tb.Fatal(err)
		}
	}()
	st, err := input.Store(r.Blobs(), []byte(`{"path":"prior"}`))
	if err != nil {
		tb.Fatal(err)
	}
	rule := 0 // no-wipe
	for i := range n {
		action := fmt.Sprintf("a-%012x", i)
		if _, err := r.AppendSession(replay.TypeToolRequested, replay.ToolRequestedData{Session: sid, Call: action, Tool: "wipe",
			InputHash: st.Hash, InputRef: st.Ref}); err != nil {
			tb.Fatal(err)
		}
		if _, err := r.AppendSession(replay.TypeToolDecided, replay.ToolDecidedData{Call: action, By: replay.ByPolicy,
			Decision: replay.DecisionBlock, Rule: &rule, RuleID: "no-wipe", Reason: "never delete the tree"}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkAdmission is the per-call cost of a session's call after 10,
// 100, 1000 and 10 000 earlier calls: the admission reads the replay's
// index (replay.SessionHead, Latest, Unresolved), so it must stay flat.
// Each sub-benchmark reports the median of a blocked call (admission,
// request and decision, one hold, one fsync: no process) and of a
// governed call (greet, the whole path). Run with -benchtime 30x.
func BenchmarkAdmission(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f := newFixture(b)
			s, err := session.Start(ctx, f.opts("agent-1"))
			if err != nil {
				b.Fatal(err)
			}
			f.priorCalls(b, s.ID(), n)
			call := func(tool, args string) time.Duration {
				t0 := time.Now()
				res, err := s.Call(ctx, session.Call{Tool: tool, Args: []byte(args)})
				if err != nil {
					b.Fatalf("%s: %v", tool, err)
				}
				if want := map[string]session.Status{"wipe": session.Blocked, "greet": session.Finished}[tool]; res.Status != want {
					b.Fatalf("%s: status %s, want %s", tool, res.Status, want)
				}
				return time.Since(t0)
			}
			call("wipe", `{"path":"prior"}`) // the first hold after the n: it replays them once
			var blocked, governed []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				blocked = append(blocked, call("wipe", `{"path":"prior"}`))
				governed = append(governed, call("greet", fmt.Sprintf(`{"name":"n%d"}`, i)))
			}
			b.StopTimer()
			b.ReportMetric(float64(median(blocked).Microseconds()), "µs/blocked-call")
			b.ReportMetric(float64(median(governed).Microseconds()), "µs/governed-call")
		})
	}
}

// TestAdmissionFlat checks what BenchmarkAdmission times, in a measure
// the shared machine's load cannot blur: the bytes a blocked call
// allocates after 5000 earlier calls are no more than after 10, within
// 2× and 64 KiB (the linear admission this replaced copied every earlier
// action of the session per call: about 1.5 MB here).
func TestAdmissionFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 5000-call session")
	}
	cost := func(n int) uint64 {
		f := newFixture(t)
		s, err := session.Start(ctx, f.opts("agent-1"))
		if err != nil {
			t.Fatal(err)
		}
		f.priorCalls(t, s.ID(), n)
		blocked := func() {
			if res, err := s.Call(ctx, session.Call{Tool: "wipe", Args: []byte(`{"path":"prior"}`)}); err != nil || res.Status != session.Blocked {
				t.Fatalf("%+v %v", res, err)
			}
		}
		blocked() // the first hold replays the n once
		var m0, m1 goruntime.MemStats
		goruntime.ReadMemStats(&m0)
		const calls = 20
		for range calls {
			blocked()
		}
		goruntime.ReadMemStats(&m1)
		return (m1.TotalAlloc - m0.TotalAlloc) / calls
	}
	small, large := cost(10), cost(5000)
	t.Logf("bytes allocated per blocked call: %d after 10 calls, %d after 5000", small, large)
	if large > 2*small+64<<10 {
		t.Fatalf("a call after 5000 calls allocates %d bytes, after 10 %d: admission is not flat", large, small)
	}
}
