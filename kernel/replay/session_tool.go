package replay

import (
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

func checkSpan(line int, sp *Span) error {
	if sp == nil {
		return nil
	}
	if !hex32RE.MatchString(sp.TraceID) || !hex16RE.MatchString(sp.SpanID) || !hex16RE.MatchString(sp.ParentSpanID) || !hex2RE.MatchString(sp.Flags) || len(sp.State) > 512 || printable.CheckText("tracestate", sp.State) != nil {
		return bad(line, ReasonSessionBadFields, "trace is not lowercase-hex trace_id/span_id/parent_span_id/flags with a tracestate of ≤ 512 bytes")
	}
	return nil
}

func sameSpan(a, b *Span) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (f *Folder) applyToolRequested(line int, e eventlog.Event, d ToolRequestedData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	s, err := f.openSession(line, d.Session)
	if err != nil {
		return err
	}
	sf := f.sess()
	switch {
	case !actionRE.MatchString(d.Call):
		return bad(line, ReasonSessionBadFields, "action id %q is not a-<12 hex>", d.Call)
	case sf.actions[d.Call] != nil:
		return bad(line, ReasonSessionBadFields, "action %s requested twice", d.Call)
	case !toolRE.MatchString(d.Tool):
		return bad(line, ReasonSessionBadFields, "tool name %q", d.Tool)
	case !digestRE.MatchString(d.InputHash) || !digestRE.MatchString(d.InputRef):
		return bad(line, ReasonSessionBadFields, "input_hash and input_ref must be sha256:<64 hex>")
	case !d.Manifest && d.InputRef != d.InputHash:
		return bad(line, ReasonSessionBadFields, "input_ref %s of a single-blob input is not its input_hash %s", d.InputRef, d.InputHash)
	case d.Manifest && d.InputRef == d.InputHash:
		return bad(line, ReasonSessionBadFields, "a manifest input_ref equal to its input_hash")
	case d.Turn != "" && !s.turns[d.Turn]:
		return bad(line, ReasonTurn, "call in turn %q, not a started, unfinished turn of session %s", d.Turn, d.Session)
	}
	if err := checkSpan(line, d.Trace); err != nil {
		return err
	}
	if amb := f.unresolved(s); amb != "" {
		return bad(line, ReasonAmbiguous, "new call while action %s is ambiguous (decide retry or abandon)", amb)
	}
	if d.RetryOf != "" {
		o := sf.actions[d.RetryOf]
		switch {
		case o == nil || o.session != d.Session:
			return bad(line, ReasonUnknownAction, "retry_of %q is not an action of session %s", d.RetryOf, d.Session)
		case o.resolved != DecisionRetry || o.retriedBy != "":
			return bad(line, ReasonApprovalBinding, "retry_of %s: the action is not decided retry, or was retried already", d.RetryOf)
		case o.v.Tool != d.Tool || o.v.InputHash != d.InputHash:
			return bad(line, ReasonApprovalBinding, "retry_of %s names another tool or input hash", d.RetryOf)
		}
		if !f.dry {
			o.retriedBy, o.v.RetriedBy = d.Call, d.Call
		}
	}
	if f.dry {
		return nil
	}
	a := &actionState{session: d.Session, trace: d.Trace, v: CallView{ID: d.Call, Tool: d.Tool, Turn: d.Turn,
		InputHash: d.InputHash, InputRef: d.InputRef, Manifest: d.Manifest, Trace: d.Trace, Status: CallRequested, RetryOf: d.RetryOf}}
	sf.actions[d.Call] = a
	s.actions = append(s.actions, d.Call)
	s.latest[latestKey(d.Tool, d.InputHash)] = d.Call
	f.blobs[d.InputRef] = true
	if d.Manifest {
		sf.manifests[d.InputRef] = d.InputHash
	}
	return nil
}

// unresolved returns an action of s that recovery closed as crashed and no
// human has decided (retry or abandon), or "". An action that started and
// has not finished in a live session is running, not ambiguous: calls may
// overlap.
func (f *Folder) unresolved(s *sessionState) string {
	if ids := sortedKeys(s.crashed); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// action returns the action a tool event names, in an open session.
func (f *Folder) action(line int, id string) (*actionState, *sessionState, error) {
	a := f.sess().actions[id]
	if a == nil {
		return nil, nil, bad(line, ReasonUnknownAction, "action %q was never requested", id)
	}
	s, err := f.openSession(line, a.session)
	if err != nil {
		return nil, nil, err
	}
	return a, s, nil
}

// policyDecision is the first rule of the contract naming tool, or the
// default block (-1).
func (f *Folder) policyDecision(tool string) (effect string, rule int, id string) {
	for i, r := range f.c.Policy {
		if r.Tool == tool {
			return r.Effect, i, r.ID
		}
	}
	return DecisionBlock, -1, "default"
}

func (f *Folder) applyToolDecided(line int, e eventlog.Event, d ToolDecidedData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	a, s, err := f.action(line, d.Call)
	if err != nil {
		return err
	}
	if printable.CheckText("reason", d.Reason) != nil {
		return bad(line, ReasonSessionBadFields, "tool.decided reason is not printable text")
	}
	switch d.By {
	case ByPolicy:
		return f.policyDecided(line, a, d)
	case ByHuman:
		return f.humanDecided(line, a, s, d)
	}
	return bad(line, ReasonSessionBadFields, "tool.decided by %q, want policy or human", d.By)
}

func (f *Folder) policyDecided(line int, a *actionState, d ToolDecidedData) error {
	effect, rule, id := f.policyDecision(a.v.Tool)
	switch {
	case a.policy != "":
		return bad(line, ReasonPolicyMismatch, "action %s decided by policy twice", d.Call)
	case d.Actor != "" || d.InputHash != "" || d.Rule == nil:
		return bad(line, ReasonSessionBadFields, "a policy decision names rule and rule_id, no actor or input_hash")
	case d.Decision != effect || *d.Rule != rule || d.RuleID != id:
		return bad(line, ReasonPolicyMismatch, "action %s: recorded %s by rule %d (%s), the contract's policy gives %s by rule %d (%s)", d.Call, d.Decision, *d.Rule, d.RuleID, effect, rule, id)
	}
	if f.dry {
		return nil
	}
	a.policy, a.v.Decision, a.v.RuleID = effect, effect, id
	a.v.Status = map[string]string{DecisionAllow: CallAllowed, DecisionBlock: CallBlocked, DecisionRequireApproval: CallPending}[effect]
	return nil
}

func (f *Folder) humanDecided(line int, a *actionState, s *sessionState, d ToolDecidedData) error {
	switch {
	case d.Rule != nil || d.RuleID != "":
		return bad(line, ReasonSessionBadFields, "a human decision names a rule")
	case printable.Check("actor", d.Actor) != nil:
		return bad(line, ReasonSessionBadFields, "a human decision needs a printable actor")
	case actor.Same(d.Actor, s.agent):
		return bad(line, ReasonSelfApproval, "action %s decided by the session's own agent %q", d.Call, d.Actor)
	}
	switch d.Decision {
	case DecisionApprove, DecisionReject:
		switch {
		case a.policy != DecisionRequireApproval:
			return bad(line, ReasonApprovalBinding, "action %s: %s of an action the policy did not send for approval (%q)", d.Call, d.Decision, a.policy)
		case a.human != "":
			return bad(line, ReasonApprovalBinding, "action %s decided by a human twice", d.Call)
		case d.InputHash != a.v.InputHash:
			return bad(line, ReasonApprovalBinding, "action %s: %s binds input %s, the request's input is %s", d.Call, d.Decision, d.InputHash, a.v.InputHash)
		}
		if f.dry {
			return nil
		}
		a.human, a.v.Approval, a.v.Approver = d.Decision, d.Decision, d.Actor
		a.v.Status = map[string]string{DecisionApprove: CallApproved, DecisionReject: CallRejected}[d.Decision]
		return nil
	case DecisionRetry, DecisionAbandon:
		switch {
		case d.InputHash != "":
			return bad(line, ReasonSessionBadFields, "a %s decision binds no input_hash", d.Decision)
		case !a.finished || a.v.Result != ResultCrashed || a.resolved != "":
			return bad(line, ReasonApprovalBinding, "action %s: %s of an action that is not ambiguous", d.Call, d.Decision)
		}
		if f.dry {
			return nil
		}
		a.resolved = d.Decision
		delete(s.crashed, d.Call)
		a.v.Status = map[string]string{DecisionRetry: CallRetried, DecisionAbandon: CallAbandoned}[d.Decision]
		return nil
	}
	return bad(line, ReasonSessionBadFields, "human decision %q", d.Decision)
}

func (f *Folder) applyToolStarted(line int, e eventlog.Event, d ToolStartedData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	a, s, err := f.action(line, d.Call)
	if err != nil {
		return err
	}
	var allowedBy string
	switch {
	case a.policy == DecisionAllow:
		allowedBy = DecisionAllow
	case a.policy == DecisionRequireApproval && a.human == DecisionApprove:
		allowedBy = DecisionApprove
	case a.policy == DecisionBlock || a.human == DecisionReject:
		return bad(line, ReasonDenied, "action %s started after %s", d.Call, a.v.Status)
	default:
		return bad(line, ReasonUndecided, "action %s started without a decision that allows it (%s)", d.Call, a.v.Status)
	}
	switch {
	case a.started:
		return bad(line, ReasonReceipt, "action %s started twice", d.Call)
	case !receiptRE.MatchString(d.Receipt) || f.s.receipts[d.Receipt]:
		return bad(line, ReasonReceipt, "receipt %q is not a new r-<12 hex>", d.Receipt)
	case d.Session != a.session || d.Tool != a.v.Tool || d.InputHash != a.v.InputHash || d.InputRef != a.v.InputRef || !sameSpan(d.Trace, a.trace):
		return bad(line, ReasonReceipt, "receipt %s does not repeat its request (session, tool, input, trace)", d.Receipt)
	case d.Decision != allowedBy:
		return bad(line, ReasonReceipt, "receipt %s names decision %q, the action was allowed by %s", d.Receipt, d.Decision, allowedBy)
	case !d.Owner.same(s.owner):
		return bad(line, ReasonSessionOwner, "receipt %s by pid %d, the session is owned by pid %d", d.Receipt, d.Owner.PID, s.owner.PID)
	}
	if _, ok := f.c.Tool(a.v.Tool); !ok {
		return bad(line, ReasonPolicyMismatch, "action %s: tool %q is not in the contract", d.Call, a.v.Tool)
	}
	if f.dry {
		return nil
	}
	f.s.receipts[d.Receipt] = true
	a.started, a.v.Receipt, a.v.Status = true, d.Receipt, CallStarted
	s.running[d.Call] = true
	return nil
}

// runningAction returns the started, unfinished action a progress or
// finish names, checking its receipt.
func (f *Folder) runningAction(line int, id, receipt string) (*actionState, error) {
	a, _, err := f.action(line, id)
	if err != nil {
		return nil, err
	}
	switch {
	case !a.started:
		return nil, bad(line, ReasonReceipt, "action %s has no tool.started", id)
	case a.finished:
		return nil, bad(line, ReasonReceipt, "action %s finished already", id)
	case receipt != a.v.Receipt:
		return nil, bad(line, ReasonReceipt, "receipt %q, the action started with %s", receipt, a.v.Receipt)
	}
	return a, nil
}

func (f *Folder) applyToolProgress(line int, e eventlog.Event, d ToolProgressData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	a, err := f.runningAction(line, d.Call, d.Receipt)
	if err != nil {
		return err
	}
	switch {
	case d.Seq != a.progress+1:
		return bad(line, ReasonReceipt, "progress seq %d, want %d", d.Seq, a.progress+1)
	case !digestRE.MatchString(d.Snapshot):
		return bad(line, ReasonSessionBadFields, "snapshot %q is not sha256:<64 hex>", d.Snapshot)
	}
	if f.dry {
		return nil
	}
	a.progress++
	f.blobs[d.Snapshot] = true
	return nil
}

func (f *Folder) applyToolFinished(line int, e eventlog.Event, d ToolFinishedData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	a, err := f.runningAction(line, d.Call, d.Receipt)
	if err != nil {
		return err
	}
	if err := f.checkFinish(line, a, d); err != nil {
		return err
	}
	for _, st := range []*runtime.Stream{d.Stdout, d.Stderr} {
		if st != nil && !digestRE.MatchString(st.Digest) {
			return bad(line, ReasonSessionBadFields, "stream digest %q is not sha256:<64 hex>", st.Digest)
		}
	}
	if f.dry {
		return nil
	}
	for _, st := range []*runtime.Stream{d.Stdout, d.Stderr} {
		if st != nil {
			f.blobs[st.Digest] = true
		}
	}
	a.finished = true
	a.v.Result, a.v.ExitCode, a.v.Output = d.Result, d.ExitCode, d.OutputHash
	a.v.Status = CallFinished
	s := f.s.sessions[a.session]
	delete(s.running, d.Call)
	if d.Result == ResultCrashed {
		a.v.Status = CallAmbiguous
		s.crashed[d.Call] = true
	}
	return nil
}

// checkFinish checks a finish's result against its outcome, its closer and
// its output hash.
func (f *Folder) checkFinish(line int, a *actionState, d ToolFinishedData) error {
	if (d.Result == ResultCrashed) != (d.ClosedBy == ClosedByRecovery) {
		return bad(line, ReasonReceipt, "result %q closed_by %q: only recovery closes an action, and only as crashed", d.Result, d.ClosedBy)
	}
	switch d.Result {
	case ResultCrashed:
		if !a.recover {
			return bad(line, ReasonReceipt, "action %s closed by recovery, but no session.resumed listed it ambiguous", d.Call)
		}
	case ResultSuccess, ResultFailure, ResultDenied:
		if d.Attestation == nil {
			return bad(line, ReasonReceipt, "action %s finished %s without a runtime attestation", d.Call, d.Result)
		}
		if t, _ := f.c.Tool(a.v.Tool); d.Attestation.Provider != t.Runtime {
			return bad(line, ReasonReceipt, "the attestation names runtime %q, the tool %q", d.Attestation.Provider, t.Runtime)
		}
		want := map[string]func(runtime.Outcome) bool{
			ResultSuccess: func(o runtime.Outcome) bool { return o == runtime.Passed && d.ExitCode == 0 },
			ResultFailure: func(o runtime.Outcome) bool {
				return o.Valid() && o != runtime.Passed && o != runtime.Error && o != runtime.Skipped && o != runtime.Interrupted
			},
			ResultDenied: func(o runtime.Outcome) bool { return o == runtime.Error },
		}[d.Result]
		if !want(d.Outcome) {
			return bad(line, ReasonReceipt, "result %s with outcome %q exit %d", d.Result, d.Outcome, d.ExitCode)
		}
	default:
		return bad(line, ReasonReceipt, "result %q", d.Result)
	}
	oh, err := OutputHash(d.ExitCode, d.Outcome, d.Stdout, d.Stderr)
	if err != nil {
		return err
	}
	if d.OutputHash != oh {
		return bad(line, ReasonReceipt, "output_hash %s, recomputed %s", d.OutputHash, oh)
	}
	return nil
}
