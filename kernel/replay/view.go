package replay

import (
	"slices"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// What a writer reads of the replay so far (internal/run decides from it).

// State is the run's state after the events applied so far.
func (f *Folder) State() State { return f.state }

// Planned is the replayed run.planned.
func (f *Folder) Planned() PlannedData { return f.planned }

// Due is the state change the last decision moves the run to while no
// state.changed has been replayed after it (a writer killed between the
// two appends left it for the next writer), or nil.
func (f *Folder) Due() *StateData { return f.due }

// SupersededBy is the run a SUPERSEDED transition names.
func (f *Folder) SupersededBy() string { return f.supersededBy }

// Approvers is the number of approvals the lifecycle counts so far (see
// approval.Tally.Counted).
func (f *Folder) Approvers() int { return f.approvals.Counted() }

// ApprovedBy reports whether any identity of the decision already
// approved.
func (f *Folder) ApprovedBy(actor string, gh *GitHubReview) bool {
	return f.approvals.Approved(gh.Identity(actor))
}

// Decisions are the decisions replayed so far, oldest first.
func (f *Folder) Decisions() []Decision { return f.r.Decisions }

// VerificationDigest is the digest the last verification.completed
// recorded, "" before one.
func (f *Folder) VerificationDigest() string { return f.r.VerificationDigest }

// Source is the source binding of the log.
func (f *Folder) Source() eventlog.Source { return f.r.Source }

// ContractHash is the contract binding of the log.
func (f *Folder) ContractHash() string { return f.r.ContractHash }

// HeadOf returns the hash of the last of events, "" when there are none.
func HeadOf(events []eventlog.Event) string { return headOf(events) }

// Checks are the results of the checks finished so far, in the contract's
// order.
func (f *Folder) Checks() []CheckReport {
	f.collect()
	return slices.Clone(f.r.Checks)
}

// CurrentDigest is the verification digest of the checks finished so far:
// what the next verification.completed must record.
func (f *Folder) CurrentDigest() (string, error) {
	f.collect()
	return VerificationDigest(&f.r)
}

// Sessions are the sessions replayed so far, oldest first, each with its
// actions in request order.
func (f *Folder) Sessions() []SessionView {
	if f.s == nil {
		return nil
	}
	out := make([]SessionView, 0, len(f.s.order))
	for _, id := range f.s.order {
		out = append(out, f.sessionView(id))
	}
	return out
}

func (f *Folder) sessionView(id string) SessionView {
	s := f.s.sessions[id]
	v := SessionView{ID: s.id, Agent: s.agent, Open: s.open, Owner: s.owner, Turns: s.nturns, Calls: []CallView{}}
	for _, a := range s.actions {
		v.Calls = append(v.Calls, f.s.actions[a].v)
	}
	return v
}

// SessionOpen reports whether a session is open, without building its
// view (OpenSession copies every action of the session).
func (f *Folder) SessionOpen() bool {
	return f.s != nil && f.s.open != "" && f.s.sessions[f.s.open] != nil
}

// OpenSession is the session that is open (started, not ended), if any.
func (f *Folder) OpenSession() (SessionView, bool) {
	if f.s == nil || f.s.open == "" {
		return SessionView{}, false
	}
	if f.s.sessions[f.s.open] == nil {
		return SessionView{}, false
	}
	return f.sessionView(f.s.open), true
}

// Action is the replayed state of action id and the id of its session.
func (f *Folder) Action(id string) (CallView, string, bool) {
	if f.s == nil || f.s.actions[id] == nil {
		return CallView{}, "", false
	}
	a := f.s.actions[id]
	return a.v, a.session, true
}

// Ambiguous lists the actions of session id that started and are not
// resolved (unfinished, or closed crashed and not decided retry or
// abandon), sorted: what a session.resumed must list.
func (f *Folder) Ambiguous(id string) []string {
	if f.s == nil || f.s.sessions[id] == nil {
		return nil
	}
	return f.ambiguous(f.s.sessions[id])
}

// OpenTurn reports whether turn is a started, unfinished turn of session id.
func (f *Folder) OpenTurn(id, turn string) bool {
	return f.s != nil && f.s.sessions[id] != nil && f.s.sessions[id].turns[turn]
}

// Unresolved lists the actions of session id that recovery closed as
// crashed and no human has decided yet (retry or abandon): while there is
// one, the session takes no new call.
func (f *Folder) Unresolved(id string) []string {
	if f.s == nil || f.s.sessions[id] == nil {
		return nil
	}
	return sortedKeys(f.s.sessions[id].crashed)
}
