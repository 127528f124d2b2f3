package run

import (
	"context"
	"fmt"
	"strings"

	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Tracking authorization (kernel/replay's authorization.go says how it
// composes with approval).

// Aliases of the authorization's wire types.
type (
	AuthorizationData = replay.AuthorizationData
	Authorization     = replay.Authorization
)

// TypeAuthorization is authorization.recorded.
const TypeAuthorization = replay.TypeAuthorization

// AuthorizeOptions describe a tracking authorization.
type AuthorizeOptions struct {
	Target string
	Actor  string
	Reject bool
	Reason string
	Fresh  Freshness
}

// Authorize records an authorization.recorded for o.Target. It refuses
// unless the run is AWAITING_APPROVAL or COMPLETE and reconciles exactly as
// Decide requires (the log on disk is the one this writer holds, run.json
// agrees with it, the verification digest recomputed from run.json is the
// logged one) and the source and contract are unchanged: a non-terminal
// run then moves to STALE, a COMPLETE one is refused with the *StaleError.
// An approval that satisfies a required authorization after the approvals
// are in completes the run. The same actor deciding the same target the
// same way again returns a *DecidedError; deciding it the other way is
// refused.
func (r *Run) Authorize(ctx context.Context, o AuthorizeOptions) error {
	if err := checkAuthorize(o); err != nil {
		return err
	}
	if err := r.authorized(o); err != nil {
		return err
	}
	st := r.State()
	if st != replay.AwaitingApproval && st != replay.Complete {
		return &StateError{State: st, Action: "authorize"}
	}
	if err := r.reconcileOnDisk(); err != nil {
		return err
	}
	if err := r.MarkStaleIfChanged(ctx, o.Fresh); err != nil {
		return err
	}
	if st == replay.Complete {
		// Terminal: it cannot move to STALE, so a change refuses.
		if err := r.CheckFresh(ctx, o.Fresh); err != nil {
			return err
		}
	}
	return r.recordAuthorization(o)
}

func checkAuthorize(o AuthorizeOptions) error {
	switch {
	case strings.TrimSpace(o.Actor) == "":
		return &RefusedError{Why: "an actor is required"}
	case !replay.ValidTarget(o.Target):
		return &RefusedError{Why: fmt.Sprintf("target %q: want 1-200 characters of A-Z a-z 0-9 . _ : / # @ + -, starting with a letter or digit", clip(o.Target))}
	case o.Reject && strings.TrimSpace(o.Reason) == "":
		return &RefusedError{Why: "a rejection needs a reason"}
	}
	return checkText(o.Actor, o.Reason)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// authorized returns a *DecidedError when o.Actor already decided o.Target
// the same way, a *RefusedError when the other way.
func (r *Run) authorized(o AuthorizeOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := approval.Approved
	if o.Reject {
		want = approval.Rejected
	}
	for _, a := range r.fold.Authorizations() {
		if a.Target != o.Target || !actor.Same(a.Actor, o.Actor) {
			continue
		}
		if approval.Decision(a.Decision) == want {
			return &DecidedError{Actor: o.Actor, Decision: want, State: r.fold.State()}
		}
		return &RefusedError{Why: fmt.Sprintf("%s already %s target %s", o.Actor, a.Decision, o.Target)}
	}
	return nil
}

// recordAuthorization appends the event and, when it completes the run,
// the state change (a writer killed between the two leaves it due, and
// the next Open records it).
func (r *Run) recordAuthorization(o AuthorizeOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fold
	cur := f.State()
	decision := approval.Approved
	if o.Reject {
		decision = approval.Rejected
	}
	d := AuthorizationData{
		Decision: string(decision), Target: o.Target, Actor: o.Actor, Reason: o.Reason, State: cur,
		VerificationDigest: f.VerificationDigest(),
		Source:             replay.Source{Commit: f.Source().Commit, Tree: f.Source().Tree},
		Contract:           f.ContractHash(),
	}
	if cur == replay.AwaitingApproval && !o.Reject && r.completesWith(o.Target) {
		d.State = replay.Complete
	}
	if err := r.appendLocked(TypeAuthorization, d); err != nil {
		return err
	}
	if d.State != cur {
		return r.transitionLocked(d.State, replay.StateData{Actor: o.Actor, Reason: o.Reason})
	}
	return nil
}

// completesWith reports whether an approved authorization of target would
// complete the run now.
func (r *Run) completesWith(target string) bool {
	as := append(r.fold.Authorizations(), Authorization{Decision: string(approval.Approved), Target: target})
	if !replay.Authorized(as, target) && !r.fold.AuthorizationSatisfied() {
		return false
	}
	req := approval.Requirement{Required: r.Contract.Approval.Required}
	return r.Contract.AuthorizationRequired() && req.Verdict(r.fold.Approvers(), false).Decision == approval.Approved
}
