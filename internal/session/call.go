package session

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/policy"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/tool"
	"github.com/proofgate/proofgate/internal/trace"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// CallError refuses a call before any evidence exists: a tool name that
// cannot be recorded, arguments that are not a bounded JSON object, an
// invalid trace context.
type CallError struct {
	Field string // "tool", "arguments", "traceparent", "tracestate"
	Err   error
}

func (e *CallError) Error() string { return fmt.Sprintf("tool call refused: %s: %v", e.Field, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *CallError) Is(target error) bool { return target == exit.Usage }

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// prepared is a call checked before any evidence: canonical input, trace.
type prepared struct {
	c         Call
	canonical []byte
	hash      string
	span      *replay.Span
	parent    string // the TRACEPARENT the tool gets, "" without a trace
	state     string
}

func prepare(c Call) (*prepared, error) {
	if !toolNameRE.MatchString(c.Tool) {
		return nil, &CallError{Field: "tool", Err: fmt.Errorf("name %q is not 1-64 characters of [A-Za-z0-9._-]", c.Tool)}
	}
	canonical, err := input.Canonical(c.Args)
	if err != nil {
		return nil, &CallError{Field: "arguments", Err: err}
	}
	p := &prepared{c: c, canonical: canonical, hash: input.Hash(canonical)}
	if c.TraceParent == "" {
		if c.TraceState != "" {
			return nil, &CallError{Field: "tracestate", Err: fmt.Errorf("a tracestate without a traceparent")}
		}
		return p, nil // without a context nothing is invented
	}
	parent, err := trace.Parse(c.TraceParent, c.TraceState)
	if err != nil {
		return nil, &CallError{Field: "traceparent", Err: err}
	}
	sp, err := parent.Child()
	if err != nil {
		return nil, &CallError{Field: "traceparent", Err: err}
	}
	p.span = &replay.Span{TraceID: sp.TraceID, SpanID: sp.SpanID, ParentSpanID: sp.ParentSpanID, Flags: sp.Flags, State: sp.State}
	p.parent, p.state = sp.Traceparent(), sp.State
	return p, nil
}

// Call passes one tool call through the gate, runs it when allowed and
// records its receipts. Before any evidence it refuses (*CallError) an
// unrecordable tool name, arguments that are not a bounded JSON object and
// an invalid trace context, and (*AmbiguousError) any call while an action
// of the session is ambiguous. A call with the same tool and input hash as
// a pending action returns pending again; as an approved, not yet started
// action, it starts that action; as a rejected one, it returns rejected.
func (s *Session) Call(ctx context.Context, c Call) (Result, error) {
	p, err := prepare(c)
	if err != nil {
		return Result{}, err
	}
	var res Result
	var adm *admitted
	err = s.hold(func(r *run.Run) error {
		var e error
		adm, res, e = s.admit(r, p)
		return e
	})
	if err != nil || adm == nil {
		return res, err
	}
	fin, err := adm.execute(ctx, s)
	if err != nil {
		// The tool ran but its output could not be stored: no finish is
		// recorded, so the action stays started and recovery reports it
		// ambiguous, which it is.
		return fin.result, err
	}
	err = s.hold(func(r *run.Run) error {
		_, e := r.AppendSession(replay.TypeToolFinished, fin.data)
		return e
	})
	return fin.result, err
}

// admitted is a call allowed to start, with its receipt written.
type admitted struct {
	id, receipt string
	t           contract.Tool
	call        tool.Call
	p           *prepared
	dec         policy.Decision
	dir         string
	blobs       *blob.Spares
	repo, state string
	paths       checkedPaths
}

// admit records the request and the decision (or finds the earlier action
// this call repeats) and, when the call may run, its tool.started. It runs
// under the run's lock.
func (s *Session) admit(r *run.Run, p *prepared) (*admitted, Result, error) {
	if err := implementing(r); err != nil {
		return nil, Result{}, err
	}
	var prev *replay.CallView
	var amb []string
	var open bool
	// The replay's admission index: map reads, no walk over the
	// session's earlier actions (replay.SessionHead, Latest).
	r.Session(func(f *replay.Folder) {
		h, ok := f.OpenHead()
		open = ok && h.ID == s.id
		amb = f.Unresolved(s.id)
		if a, ok := f.Latest(s.id, p.c.Tool, p.hash); ok {
			prev = repeated(a)
		}
	})
	switch {
	case !open:
		return nil, Result{}, &UnknownSessionError{Run: r.ID, Session: s.id}
	case len(amb) > 0:
		return nil, Result{}, &AmbiguousError{Calls: amb}
	}
	res := Result{InputHash: p.hash}
	if prev != nil && prev.Status != replay.CallRetried {
		res.Action, res.Decision = prev.ID, s.gate.Decide(prev.Tool)
		switch prev.Status {
		case replay.CallPending:
			res.Status = PendingApproval
			return nil, res, nil
		case replay.CallRejected:
			res.Status = Rejected
			return nil, res, nil
		}
		// the approved request's trace, not this poll's: the receipt
		// repeats its request
		q := *p
		q.span, q.parent, q.state = prev.Trace, "", ""
		if prev.Trace != nil {
			q.parent = "00-" + prev.Trace.TraceID + "-" + prev.Trace.SpanID + "-" + prev.Trace.Flags
			q.state = prev.Trace.State
		}
		return s.start(r, prev.ID, &q, res, replay.DecisionApprove)
	}
	retryOf := ""
	if prev != nil {
		retryOf = prev.ID
	}
	return s.request(r, p, res, retryOf)
}

// repeated is a, the session's latest action with this call's tool and
// input hash, when the call repeats it: pending, approved and not started,
// rejected, or decided retry and not retried yet.
func repeated(a replay.CallView) *replay.CallView {
	switch {
	case a.Status == replay.CallPending, a.Status == replay.CallApproved, a.Status == replay.CallRejected:
		return &a
	case a.Status == replay.CallRetried && a.RetriedBy == "":
		return &a
	}
	return nil
}

// request records tool.requested and the policy's tool.decided, then
// starts the action when the policy allows it.
func (s *Session) request(r *run.Run, p *prepared, res Result, retryOf string) (*admitted, Result, error) {
	st, err := input.Store(s.putter(r), p.canonical)
	if err != nil {
		return nil, res, err
	}
	action := newID("a-")
	res.Action = action
	if _, err := r.AppendSession(replay.TypeToolRequested, replay.ToolRequestedData{Session: s.id, Turn: p.c.Turn, Call: action,
		Tool: p.c.Tool, InputHash: st.Hash, InputRef: st.Ref, Manifest: st.Manifest, Trace: p.span, RetryOf: retryOf}); err != nil {
		return nil, res, err
	}
	d := s.gate.Decide(p.c.Tool)
	res.Decision = d
	rule := d.Rule
	if _, err := r.AppendSession(replay.TypeToolDecided, replay.ToolDecidedData{Call: action, By: replay.ByPolicy,
		Decision: string(d.Effect), Rule: &rule, RuleID: d.RuleID, Reason: d.Reason}); err != nil {
		return nil, res, err
	}
	switch d.Effect {
	case policy.Allow:
		return s.start(r, action, p, res, replay.DecisionAllow)
	case policy.RequireApproval:
		res.Status = PendingApproval
	default:
		res.Status = Blocked
	}
	return nil, res, nil
}

// start renders the call and records tool.started: the receipt.
func (s *Session) start(r *run.Run, action string, p *prepared, res Result, by string) (*admitted, Result, error) {
	t, ok := s.c.Tool(p.c.Tool)
	if !ok {
		return nil, res, fmt.Errorf("tool %q is not in the contract", p.c.Tool)
	}
	call, err := tool.Render(t, p.canonical)
	if err != nil {
		return nil, res, err
	}
	paths, err := checkPaths(toolDir(s.o.RepoDir, t), call)
	if err != nil {
		return nil, res, err
	}
	var ref string
	r.Session(func(f *replay.Folder) {
		if a, _, ok := f.Action(action); ok {
			ref = a.InputRef
		}
	})
	j := &admitted{id: action, receipt: newID("r-"), t: t, call: call, p: p, dec: res.Decision, dir: r.Dir, blobs: s.putter(r), repo: s.o.RepoDir, state: s.o.StateDir, paths: paths}
	if _, err := r.AppendSession(replay.TypeToolStarted, replay.ToolStartedData{Call: action, Receipt: j.receipt, Session: s.id,
		Tool: t.Name, InputHash: p.hash, InputRef: ref, Decision: by, Owner: s.owner, Trace: p.span}); err != nil {
		return nil, res, err
	}
	return j, res, nil
}

// finish is a finished action: its event and the caller's result.
type finish struct {
	data   replay.ToolFinishedData
	result Result
}

// execute runs the admitted call's tool in its runtime, holding no lock, and stores
// both streams as blobs.
func (j *admitted) execute(ctx context.Context, s *Session) (finish, error) {
	res := Result{Action: j.id, Decision: j.dec, InputHash: j.p.hash}
	rr, err := j.invoke(ctx, s)
	if err != nil {
		return finish{result: res}, fmt.Errorf("action %s: %w", j.id, err)
	}
	res.Status = Finished
	d := replay.ToolFinishedData{Call: j.id, Receipt: j.receipt, Outcome: rr.res.Outcome, ExitCode: rr.res.ExitCode,
		DurationMS: rr.res.Finished.Sub(rr.res.Started).Milliseconds(), Attestation: &rr.res.Attestation,
		Stdout: rr.stdout, Stderr: rr.stderr}
	switch d.Outcome {
	case runtime.Passed:
		d.Result = replay.ResultSuccess
	case runtime.Error:
		d.Result = replay.ResultDenied
	default:
		d.Result = replay.ResultFailure
	}
	d.OutputHash, _ = replay.OutputHash(d.ExitCode, d.Outcome, d.Stdout, d.Stderr)
	res.Result, res.Outcome, res.ExitCode, res.OutputHash = d.Result, d.Outcome, d.ExitCode, d.OutputHash
	res.Stdout, res.Stderr = rr.out, rr.err
	return finish{data: d, result: res}, nil
}

type ran struct {
	res            runtime.Result
	stdout, stderr *runtime.Stream
	out, err       []byte
}

// invoke runs the tool with both streams captured to memory (capped at
// the tool's output_limit), then stores them as blobs with one PutMany: a
// stream whose blob exists already (the empty stderr, a repeated output)
// costs no file and no fsync, the new ones share one directory fsync.
func (j *admitted) invoke(ctx context.Context, s *Session) (ran, error) {
	var ob, eb bytes.Buffer
	limit := int64(j.t.Output)
	stdout := runtime.NewCapture(&ob, limit)
	stderr := runtime.NewCapture(&eb, limit)
	stop := j.recordProgress(s, stdout, stderr) // tool.progress, progress.go
	// While the tool runs, no fsync of the call is in flight: make this
	// output's blob file and the next call's input's (ADR 0028).
	j.blobs.Fill()
	res := j.run(ctx, s, stdout, stderr)
	stop()
	if name := j.paths.moved(); name != "" {
		res = withheld(res, name)
		ob.Reset()
		eb.Reset()
		stdout, stderr = runtime.NewCapture(&ob, limit), runtime.NewCapture(&eb, limit)
	}
	so, se := stdout.Stream(), stderr.Stream()
	if _, err := j.blobs.PutMany([]string{so.Digest, se.Digest}, [][]byte{ob.Bytes(), eb.Bytes()}); err != nil {
		return ran{res: res}, fmt.Errorf("storing output: %w", err)
	}
	return ran{res: res, stdout: &so, stderr: &se, out: ob.Bytes(), err: eb.Bytes()}, nil
}

// run runs the tool's runtime, or says why it could not.
func (j *admitted) run(ctx context.Context, s *Session, stdout, stderr *runtime.Capture) runtime.Result {
	var rt runtime.Runtime
	var err error
	if s.o.Runtime == nil {
		err = fmt.Errorf("no runtime provider configured")
	} else {
		rt, err = s.o.Runtime(j.t.Runtime)
	}
	if err != nil {
		now := s.now()
		return runtime.Result{ExitCode: -1, Outcome: runtime.Error, Started: now, Finished: now,
			Detail: fmt.Sprintf("runtime %q unavailable: %v", j.t.Runtime, err), Attestation: runtime.Attestation{Provider: j.t.Runtime}}
	}
	if name := j.paths.moved(); name != "" {
		now := s.now()
		return withheld(runtime.Result{Started: now, Finished: now, Attestation: runtime.Attestation{Provider: j.t.Runtime}}, name)
	}
	spec := tool.Spec(s.run, j.id, j.t, j.call, j.repo)
	spec.ProcDir = filepath.Join(j.dir, run.ProcDir)
	spec.KeepRecords = true // dropped at the session's end (drop)
	spec.Exclude = s.workspaceExclude()
	if j.p.parent != "" {
		env := make(map[string]string, len(spec.Env)+2)
		for k, v := range spec.Env {
			env[k] = v
		}
		env["TRACEPARENT"] = j.p.parent
		if j.p.state != "" {
			env["TRACESTATE"] = j.p.state
		}
		spec.Env = env
	}
	return rt.Run(ctx, spec, stdout, stderr)
}
