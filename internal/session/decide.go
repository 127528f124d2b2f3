package session

import (
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Approve records a human approval of a pending action, bound to the input
// hash its request recorded. It refuses the session's own agent identity
// (*SelfApprovalError), an unknown action (*UnknownActionError), and an
// action that is not pending approval (*DecidedError).
func Approve(o Options, action, actor string) error {
	return decide(o, action, actor, "", replay.DecisionApprove)
}

// Reject records a human rejection of a pending action.
func Reject(o Options, action, actor, reason string) error {
	return decide(o, action, actor, reason, replay.DecisionReject)
}

// Retry decides an ambiguous action: the session's next call with the same
// tool and arguments is a new action (retry_of it), decided by policy again.
// It is refused (*StillRunningError) while anything the action's call left
// still runs, or while that cannot be told: o.Runtime must reach Docker
// for a tool that runs there.
func Retry(o Options, action, actor string) error {
	return decide(o, action, actor, "", replay.DecisionRetry)
}

// Abandon decides an ambiguous action: it is never run again.
func Abandon(o Options, action, actor, reason string) error {
	return decide(o, action, actor, reason, replay.DecisionAbandon)
}

// applicable is the action status each human decision applies to.
var applicable = map[string]string{
	replay.DecisionApprove: replay.CallPending,
	replay.DecisionReject:  replay.CallPending,
	replay.DecisionRetry:   replay.CallAmbiguous,
	replay.DecisionAbandon: replay.CallAmbiguous,
}

func decide(o Options, action, name, reason, decision string) error {
	if err := actor.Check("--actor", name); err != nil {
		return err
	}
	if err := printable.CheckText("--reason", reason); err != nil {
		return err
	}
	return withRun(o, func(r *run.Run) error {
		if err := implementing(r); err != nil {
			return err
		}
		var a replay.CallView
		var agent string
		var ok bool
		r.Session(func(f *replay.Folder) {
			var sid string
			a, sid, ok = f.Action(action)
			if h, found := f.Head(sid); found {
				agent = h.Agent
			}
		})
		switch {
		case !ok:
			return &UnknownCallError{Call: action}
		case actor.Same(name, agent):
			return &SelfApprovalError{Call: action, Actor: name}
		case a.Status != applicable[decision]:
			return &DecidedError{Call: action, Status: a.Status}
		}
		if decision == replay.DecisionRetry {
			if err := stillRuns(o, r, a); err != nil {
				return err
			}
		}
		d := replay.ToolDecidedData{Call: action, By: replay.ByHuman, Decision: decision, Actor: name, Reason: reason}
		if decision == replay.DecisionApprove || decision == replay.DecisionReject {
			d.InputHash = a.InputHash
		}
		_, err := r.AppendSession(replay.TypeToolDecided, d)
		return err
	})
}
