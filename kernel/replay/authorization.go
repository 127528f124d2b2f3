package replay

import (
	"regexp"
	"slices"

	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// Tracking authorization (issue 16 item 3, ADR 0024): a human decision,
// separate from approval, that a run's result may be published to a named
// external target. It is recorded as authorization.recorded, bound like a
// decision to the verification digest, source and contract.
//
// How it composes with approval: a run whose contract says
// authorization: {required: true} is COMPLETE only when its approvals
// satisfy approval.required and at least one target is authorized (it has
// an approved authorization and no rejected one). Whichever of the two
// comes last completes the run; until then the run stays
// AWAITING_APPROVAL. A rejected authorization changes no state: it only
// withholds its target. On a run whose contract does not require one, an
// authorization is recorded while the run is AWAITING_APPROVAL or after it
// is COMPLETE, and never moves it. No new transition exists: the lifecycle
// table is unchanged, and COMPLETE still needs its approvals.

// TypeAuthorization is the event type of a tracking authorization.
const TypeAuthorization = "authorization.recorded"

// AuthorizationData is the data of authorization.recorded.
type AuthorizationData struct {
	Decision           string `json:"decision"` // approved | rejected
	Target             string `json:"target"`
	Actor              string `json:"actor"`
	Reason             string `json:"reason,omitempty"`
	State              State  `json:"state"` // the state the authorization moves the run to
	VerificationDigest string `json:"verification_digest"`
	Source             Source `json:"source"`
	Contract           string `json:"contract"`
}

// Authorization is a recorded authorization as the report (run.json) and
// the bundle predicate list it.
type Authorization struct {
	Decision           string `json:"decision"`
	Target             string `json:"target"`
	Actor              string `json:"actor"`
	Time               string `json:"time"`
	Reason             string `json:"reason,omitempty"`
	VerificationDigest string `json:"verification_digest"`
}

// targetRE is the shape of an authorization target: a name of an external
// place (an issue key, a URL-ish path, a deployment name) without spaces
// or control characters.
var targetRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/#@+-]{0,199}$`)

// ValidTarget reports whether t is an acceptable authorization target.
func ValidTarget(t string) bool { return targetRE.MatchString(t) }

func (f *Folder) applyAuthorization(line int, e eventlog.Event, d AuthorizationData) error {
	if f.state != AwaitingApproval && f.state != Complete {
		return bad(line, ReasonDecision, "authorization recorded while %s", f.state)
	}
	switch {
	case d.VerificationDigest != f.r.VerificationDigest:
		return bad(line, ReasonDecision, "authorization binds verification %s, the run has %s", d.VerificationDigest, f.r.VerificationDigest)
	case d.Contract != f.r.ContractHash:
		return bad(line, ReasonDecision, "authorization binds contract %s", d.Contract)
	case d.Source.Commit != f.r.Source.Commit || d.Source.Tree != f.r.Source.Tree:
		return bad(line, ReasonDecision, "authorization binds source %s", d.Source.Commit)
	case d.Actor == "":
		return bad(line, ReasonDecision, "authorization without actor")
	case !ValidTarget(d.Target):
		return bad(line, ReasonDecision, "authorization target %q", clipText(d.Target))
	}
	v := approval.Decision(d.Decision)
	if !v.Valid() {
		return bad(line, ReasonDecision, "authorization decision %q", d.Decision)
	}
	f.r.Authorizations = append(f.r.Authorizations, Authorization{Decision: d.Decision, Target: d.Target, Actor: d.Actor,
		Time: e.Time, Reason: d.Reason, VerificationDigest: d.VerificationDigest})
	next := f.state
	if f.state == AwaitingApproval && f.completes() {
		next = Complete
	}
	if d.State != next {
		return bad(line, ReasonDecision, "authorization says it moves the run to %s, the replay says %s", d.State, next)
	}
	f.due = nil
	if next != f.state {
		f.due = &StateData{From: AwaitingApproval, To: next, Actor: d.Actor, Reason: d.Reason}
	}
	return nil
}

// completes reports whether the decisions so far complete the run: the
// approvals satisfy approval.required and, when the contract requires an
// authorization, some target is authorized.
func (f *Folder) completes() bool {
	return f.verdict().Decision == approval.Approved && f.authorizationSatisfied()
}

// authorizationSatisfied reports whether the contract needs no
// authorization or some target is authorized.
func (f *Folder) authorizationSatisfied() bool {
	if !f.c.AuthorizationRequired() {
		return true
	}
	for _, a := range f.r.Authorizations {
		if Authorized(f.r.Authorizations, a.Target) {
			return true
		}
	}
	return false
}

// Authorized reports whether target has an approved authorization among
// as and no rejected one: a single rejection withholds the target.
func Authorized(as []Authorization, target string) bool {
	ok := false
	for _, a := range as {
		if a.Target != target {
			continue
		}
		if approval.Decision(a.Decision) == approval.Rejected {
			return false
		}
		ok = true
	}
	return ok
}

// Authorizations are the authorizations replayed so far, oldest first.
func (f *Folder) Authorizations() []Authorization { return slices.Clone(f.r.Authorizations) }

// AuthorizationSatisfied reports whether the contract's authorization
// requirement (if any) is met by the authorizations replayed so far.
func (f *Folder) AuthorizationSatisfied() bool { return f.authorizationSatisfied() }

// Completes reports whether the decisions replayed so far complete the run
// (approvals and, when required, an authorized target).
func (f *Folder) Completes() bool { return f.completes() }
