package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

var ctx = context.Background()

func start(t *testing.T, f *fixture) *session.Session {
	t.Helper()
	s, err := session.Start(ctx, f.opts("agent-1"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func call(t *testing.T, s *session.Session, tool, args string) session.Result {
	t.Helper()
	res, err := s.Call(ctx, session.Call{Tool: tool, Args: []byte(args)})
	if err != nil {
		t.Fatalf("call %s %s: %v", tool, args, err)
	}
	return res
}

// The three policy effects, an approval bound to its input hash, and the
// human-decision refusals; then the run replays, leaves IMPLEMENTING and
// verifies.
func TestAllowBlockApproval(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	if len(s.Tools()) == 0 {
		t.Fatal("no visible tools")
	}
	for _, tl := range s.Tools() {
		if tl.Name == "wipe" {
			t.Fatal("a blocked tool is visible")
		}
	}
	res := call(t, s, "greet", `{"name":"Ada"}`)
	if res.Status != session.Finished || res.Result != "success" || string(res.Stdout) != "hello Ada\n" || res.OutputHash == "" {
		t.Fatalf("greet: %+v stdout %q", res, res.Stdout)
	}
	res = call(t, s, "wipe", `{}`)
	if res.Status != session.Blocked || res.Decision.RuleID != "no-wipe" {
		t.Fatalf("wipe: %+v", res)
	}
	for _, name := range []string{"Greet", "gre\u0435t"} { // case and Cyrillic-e twins
		res, err := s.Call(ctx, session.Call{Tool: name, Args: []byte(`{"name":"x"}`)})
		if err == nil && (res.Status != session.Blocked || res.Decision.Rule != -1) {
			t.Fatalf("%q: %+v, want blocked by default", name, res)
		}
	}
	pend := call(t, s, "deploy", `{"env":"prod"}`)
	if pend.Status != session.PendingApproval {
		t.Fatalf("deploy: %+v", pend)
	}
	other := call(t, s, "deploy", `{"env":"staging"}`)
	if other.Status != session.PendingApproval || other.Action == pend.Action {
		t.Fatalf("deploy staging: %+v", other)
	}
	if again := call(t, s, "deploy", `{"env":"prod"}`); again.Action != pend.Action || again.Status != session.PendingApproval {
		t.Fatalf("repeated pending call: %+v", again)
	}
	o := f.opts("")
	var self *session.SelfApprovalError
	if err := session.Approve(o, pend.Action, "Agent-1"); !errors.As(err, &self) {
		t.Fatalf("approval by the agent itself: %v", err)
	}
	var unknown *session.UnknownCallError
	if err := session.Approve(o, "a-ffffffffffff", "alice"); !errors.As(err, &unknown) {
		t.Fatalf("unknown action: %v", err)
	}
	var decided *session.DecidedError
	if err := session.Approve(o, res.Action, "alice"); !errors.As(err, &decided) {
		t.Fatalf("approving a blocked action: %v", err)
	}
	if err := session.Approve(o, pend.Action, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := session.Approve(o, pend.Action, "bob"); !errors.As(err, &decided) {
		t.Fatalf("second approval: %v", err)
	}
	// the approval binds prod's input hash: staging stays pending
	if res := call(t, s, "deploy", `{"env":"staging"}`); res.Status != session.PendingApproval || res.Action != other.Action {
		t.Fatalf("staging after prod's approval: %+v", res)
	}
	if err := session.Reject(o, other.Action, "alice", "not today"); err != nil {
		t.Fatal(err)
	}
	if res := call(t, s, "deploy", `{"env":"staging"}`); res.Status != session.Rejected {
		t.Fatalf("rejected call: %+v", res)
	}
	ran := call(t, s, "deploy", `{"env":"prod"}`)
	if ran.Action != pend.Action || ran.Status != session.Finished || string(ran.Stdout) != "hello prod\n" {
		t.Fatalf("approved call: %+v", ran)
	}
	// leaving IMPLEMENTING with the session open is refused, before any event
	r, err := run.Open(f.state, f.id)
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.events(t))
	var open *run.SessionOpenError
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: f.repo, StateDir: f.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); !errors.As(err, &open) {
		t.Fatalf("exec with an open session: %v", err)
	}
	r.Close()
	if len(f.events(t)) != n {
		t.Fatal("a refused exec wrote events")
	}
	if err := s.End("done"); err != nil {
		t.Fatal(err)
	}
	rep := f.audit(t)
	if len(rep.Sessions) != 1 || rep.Sessions[0].Open || len(rep.Sessions[0].Calls) != 5 {
		t.Fatalf("sessions: %+v", rep.Sessions)
	}
	for _, b := range []string{ran.InputHash, res.InputHash} {
		if !contains(rep.Blobs, b) {
			t.Fatalf("input %s not in blobs", b)
		}
	}
	r, err = run.Open(f.state, f.id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: f.repo, StateDir: f.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); st != replay.AwaitingApproval {
		t.Fatalf("after exec: %s", st)
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// The log holds hashes, never arguments or output.
func TestLogHoldsNoRawData(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	call(t, s, "greet", `{"name":"Zanzibar"}`)
	for _, e := range f.events(t) {
		if strings.Contains(string(e.Data), "Zanzibar") {
			t.Fatalf("%s holds the raw argument: %s", e.Type, e.Data)
		}
	}
}

// Refusals before any evidence: bad arguments, a bad traceparent, a
// tracestate alone, an unrecordable tool name.
func TestRefusedBeforeEvidence(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	n := len(f.events(t))
	for _, c := range []session.Call{
		{Tool: "greet", Args: []byte(`[1]`)},
		{Tool: "greet", Args: []byte(`{"name":"a","name":"b"}`)},
		{Tool: "greet", Args: []byte(`{"name":"Ada"}`), TraceParent: "00-00000000000000000000000000000000-0000000000000000-01"},
		{Tool: "greet", Args: []byte(`{"name":"Ada"}`), TraceParent: "garbage"},
		{Tool: "greet", Args: []byte(`{"name":"Ada"}`), TraceState: "a=b"},
		{Tool: "greet\n", Args: []byte(`{}`)},
	} {
		var ce *session.CallError
		if _, err := s.Call(ctx, c); !errors.As(err, &ce) {
			t.Fatalf("%+v: %v, want *CallError", c, err)
		}
	}
	if len(f.events(t)) != n {
		t.Fatal("a refused call left events")
	}
}

// A call with a traceparent records a fresh child span and gives the tool
// TRACEPARENT; without one nothing is invented.
func TestTrace(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := s.Call(ctx, session.Call{Tool: "traced", Args: []byte(`{}`), TraceParent: tp, TraceState: "congo=t61rcWkgMzE"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(res.Stdout), "\n")
	var req replay.ToolRequestedData
	for _, e := range f.events(t) {
		if e.Type == replay.TypeToolRequested {
			if err := strictjson.Decode(e.Data, &req); err != nil {
				t.Fatal(err)
			}
		}
	}
	sp := req.Trace
	if sp == nil || sp.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || sp.ParentSpanID != "00f067aa0ba902b7" || sp.SpanID == sp.ParentSpanID {
		t.Fatalf("recorded span %+v", sp)
	}
	if lines[0] != "00-"+sp.TraceID+"-"+sp.SpanID+"-01" || lines[1] != "congo=t61rcWkgMzE" {
		t.Fatalf("tool saw TRACEPARENT %q TRACESTATE %q", lines[0], lines[1])
	}
	res2 := call(t, s, "traced", `{}`)
	if string(res2.Stdout) != "\n\n" {
		t.Fatalf("a call without context got %q", res2.Stdout)
	}
	if res2.InputHash != res.InputHash {
		t.Fatal("the input hash depends on the trace")
	}
	// an approved call polled with another trace context starts under its
	// request's
	pend, err := s.Call(ctx, session.Call{Tool: "deploy", Args: []byte(`{"env":"prod"}`), TraceParent: tp})
	if err != nil || pend.Status != session.PendingApproval {
		t.Fatalf("deploy: %+v %v", pend, err)
	}
	if err := session.Approve(f.opts(""), pend.Action, "alice"); err != nil {
		t.Fatal(err)
	}
	ran, err := s.Call(ctx, session.Call{Tool: "deploy", Args: []byte(`{"env":"prod"}`), TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"})
	if err != nil || ran.Action != pend.Action || ran.Result != "success" {
		t.Fatalf("approved poll with another trace: %+v %v", ran, err)
	}
	f.audit(t)
}

// A tool that ignores SIGTERM is killed at its timeout and recorded; an
// output flood is capped; a failing tool is a failure.
func TestHostileTools(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	t0 := time.Now()
	res := call(t, s, "stubborn", `{}`)
	if el := time.Since(t0); res.Outcome != runtime.Timeout || res.Result != "failure" || el > 15*time.Second {
		t.Fatalf("stubborn: %+v after %s", res, el)
	}
	res = call(t, s, "flood", `{}`)
	if res.Outcome != runtime.OutputLimit || res.Result != "failure" || len(res.Stdout) > 1024 {
		t.Fatalf("flood: outcome %s result %s, %d bytes kept", res.Outcome, res.Result, len(res.Stdout))
	}
	res = call(t, s, "fail", `{}`)
	if res.Outcome != runtime.Failed || res.ExitCode != 3 || res.Result != "failure" {
		t.Fatalf("fail: %+v", res)
	}
	if res := call(t, s, "greet", `{"name":"$(rm -rf /)"}`); res.Result != "success" || string(res.Stdout) != "hello $(rm -rf /)\n" {
		// one argv element, never a shell
		t.Fatalf("injection: %+v %q", res, res.Stdout)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	rep := f.audit(t)
	for _, a := range rep.Sessions[0].Calls {
		if a.Status != replay.CallFinished {
			t.Fatalf("action %+v", a)
		}
	}
}

// A session on a run that is not IMPLEMENTING is refused; Begin moves a
// PLANNED run there.
func TestNotImplementing(t *testing.T) {
	f := newFixture(t)
	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	f.id = r.ID
	r.Close()
	var ni *session.NotImplementingError
	if _, err := session.Start(ctx, f.opts("agent-1")); !errors.As(err, &ni) {
		t.Fatalf("start on PLANNED: %v", err)
	}
	if err := session.Begin(ctx, f.opts("")); err != nil {
		t.Fatal(err)
	}
	start(t, f)
}

// Calls of one session from several goroutines (an MCP client calling
// tools in parallel) each get their receipts; the run replays.
func TestParallelCalls(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			res, err := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(`{"name":"p` + string(rune('a'+i)) + `"}`)})
			if err == nil && res.Result != "success" {
				err = errors.New(res.Result)
			}
			errs <- err
		}()
	}
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	if n := len(f.audit(t).Sessions[0].Calls); n != 6 {
		t.Fatalf("%d actions", n)
	}
}
