package session_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// While a session is open run.json is not rewritten for its events (ADR
// 0019): status and audit of the run mid-session still report every call,
// from the log, and say the projection lags; session.ended brings run.json
// up to the log again.
func TestStatusMidSession(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	call(t, s, "greet", `{"name":"Ada"}`)
	call(t, s, "greet", `{"name":"Bob"}`)
	events, err := run.ReadLog(f.dir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := run.Inspect(ctx, f.state, f.id, run.Freshness{RepoDir: f.repo, StateDir: f.state})
	if err != nil {
		t.Fatal(err)
	}
	if !st.ProjectionLag || st.ChainLength != len(events) || st.State != replay.Implementing {
		t.Fatalf("mid-session status: lag %v, chain %d of %d, state %s", st.ProjectionLag, st.ChainLength, len(events), st.State)
	}
	if len(st.Sessions) != 1 || !st.Sessions[0].Open || len(st.Sessions[0].Calls) != 2 {
		t.Fatalf("mid-session sessions: %+v", st.Sessions)
	}
	for _, a := range st.Sessions[0].Calls {
		if a.Status != replay.CallFinished {
			t.Fatalf("action %s is %s, want finished", a.ID, a.Status)
		}
	}
	rep, err := run.Audit(f.dir())
	if !replay.IsReason(err, replay.ReasonProjectionLag) || rep == nil || rep.ChainLength != len(events) {
		t.Fatalf("mid-session audit: %v", err)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Audit(f.dir()); err != nil {
		t.Fatalf("audit after the session ended: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(f.dir(), run.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	var proj replay.Report
	if err := json.Unmarshal(raw, &proj); err != nil {
		t.Fatal(err)
	}
	if events, _ = run.ReadLog(f.dir()); proj.ChainLength != len(events) {
		t.Fatalf("run.json reflects %d of %d events after the session ended", proj.ChainLength, len(events))
	}
}
