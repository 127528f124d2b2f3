package replay

import (
	"slices"

	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Writer is a kind of writer that may append an event type to a run's log.
type Writer uint8

// Writer kinds.
const (
	// WriterKernel is the run's own lifecycle writer in internal/run: Plan,
	// Exec, Decide and the state changes.
	WriterKernel Writer = 1 << iota
	// WriterAppend is any caller of internal/run's Run.Append: a recorded
	// fact that changes no state (a checkpoint signer, unlock).
	WriterAppend
	// WriterEventLog is the event log itself: kernel/eventlog writes
	// log.recovered after a damaged tail.
	WriterEventLog
	// WriterSession is internal/session, through internal/run's
	// AppendSession: the session, turn and tool events of an agent
	// session while the run is IMPLEMENTING.
	WriterSession
)

// eventType is one row of the event-type table.
type eventType struct {
	// apply reads the event's data (decoded: the type parameter is the
	// data's Go type) and applies it to the replay.
	apply func(f *Folder, line int, e eventlog.Event) error
	// writers are the kinds of writer that may append the type.
	writers Writer
	// first: the type is the log's first event, and appears only there.
	first bool
}

// eventTypes lists every event type the replay accepts; any other type is
// refused (ReasonUnknownEvent). A row is {apply, writers, first}: an apply
// made with decoded reads the data into its last parameter's type. Adding
// an event type is adding a row here and documenting it in docs/SPEC.md §4
// (TestEventTypesDocumented checks).
var eventTypes = map[string]eventType{
	TypePlanned:       {decoded((*Folder).applyPlanned), WriterKernel, true},
	TypeContext:       {decoded((*Folder).applyContext), WriterKernel, false},
	TypeState:         {decoded((*Folder).applyState), WriterKernel, false},
	TypeCheckStarted:  {decoded((*Folder).applyCheckStarted), WriterKernel, false},
	TypeCheckFinished: {decoded((*Folder).applyCheckFinished), WriterKernel, false},
	TypeBudget:        {(*Folder).applyBudget, WriterKernel, false},
	TypeVerification:  {decoded((*Folder).applyVerification), WriterKernel, false},
	TypeApproval:      {decoded((*Folder).applyApproval), WriterKernel, false},
	TypeLockBroken:    {recorded, WriterAppend, false},
	TypeCheckpoint:    {recorded, WriterAppend, false},
	TypeRecovered:     {recorded, WriterEventLog, false},
	TypeAuthorization: {decoded((*Folder).applyAuthorization), WriterKernel, false},
	TypeShardMerged:   {decoded((*Folder).applyShardMerged), WriterKernel, false},

	TypeCleanup:           {decoded((*Folder).applyCleanup), WriterAppend, false},
	TypeEvidenceCollected: {decoded((*Folder).applyEvidenceCollected), WriterAppend, false},
	TypeEvidenceVerdict:   {decoded((*Folder).applyEvidenceVerdict), WriterAppend, false},

	TypeSessionStarted: {decoded((*Folder).applySessionStarted), WriterSession, false},
	TypeSessionResumed: {decoded((*Folder).applySessionResumed), WriterSession, false},
	TypeSessionEnded:   {decoded((*Folder).applySessionEnded), WriterSession, false},
	TypeTurnStarted:    {decoded((*Folder).applyTurnStarted), WriterSession, false},
	TypeTurnFinished:   {decoded((*Folder).applyTurnFinished), WriterSession, false},
	TypeToolRequested:  {decoded((*Folder).applyToolRequested), WriterSession, false},
	TypeToolDecided:    {decoded((*Folder).applyToolDecided), WriterSession, false},
	TypeToolStarted:    {decoded((*Folder).applyToolStarted), WriterSession, false},
	TypeToolProgress:   {decoded((*Folder).applyToolProgress), WriterSession, false},
	TypeToolFinished:   {decoded((*Folder).applyToolFinished), WriterSession, false},
}

// Types returns every event type the replay accepts, sorted.
func Types() []string {
	ts := make([]string, 0, len(eventTypes))
	for t := range eventTypes {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// MayWrite reports whether a writer of kind w may append events of type typ.
func MayWrite(typ string, w Writer) bool {
	t, ok := eventTypes[typ]
	return ok && t.writers&w != 0
}

// decoded makes an apply function of one that takes the event's data
// decoded (strictly: a closed format) into a T.
func decoded[T any](apply func(*Folder, int, eventlog.Event, T) error) func(*Folder, int, eventlog.Event) error {
	return func(f *Folder, line int, e eventlog.Event) error {
		var d T
		if err := strictjson.Decode(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "%s: %v", e.Type, err)
		}
		return apply(f, line, e, d)
	}
}

// recorded applies a recorded fact that changes no state; its data is not
// read by the replay.
func recorded(*Folder, int, eventlog.Event) error { return nil }

func (f *Folder) applyPlanned(line int, e eventlog.Event, d PlannedData) error {
	f.planned = d
	if f.planned.Contract.Hash != e.Contract {
		return bad(line, ReasonContract, "run.planned names contract %s, the line is bound to %s", f.planned.Contract.Hash, e.Contract)
	}
	if w := f.planned.Worktree; w.Commit != e.Source.Commit || w.Tree != e.Source.Tree {
		return bad(line, ReasonBadEvent, "run.planned binds commit %s tree %s, the log is bound to commit %s tree %s", w.Commit, w.Tree, e.Source.Commit, e.Source.Tree)
	}
	if f.planned.Worktree.Dirty && !f.planned.AllowDirty {
		return bad(line, ReasonBadEvent, "run.planned on a dirty work tree without allow_dirty")
	}
	if err := checkImplementedBy(line, e, d); err != nil {
		return err
	}
	if f.planned.Contract.Profile != f.c.Profile {
		return bad(line, ReasonContract, "run.planned names profile %q, contract.json is profile %q", f.planned.Contract.Profile, f.c.Profile)
	}
	ids := make([]string, len(f.c.Checks))
	for i, c := range f.c.Checks {
		ids[i] = c.ID
	}
	if !slices.Equal(f.planned.Checks, ids) {
		return bad(line, ReasonContract, "run.planned lists checks %v, contract.json has %v", f.planned.Checks, ids)
	}
	f.r.Repo, f.r.Profile = f.planned.Repo, f.planned.Contract.Profile
	f.r.Worktree = &Worktree{Dirty: f.planned.Worktree.Dirty, Digest: f.planned.Worktree.Digest}
	f.r.ImplementedBy = f.planned.ImplementedBy
	return f.move(line, Planned)
}

func (f *Folder) applyState(line int, _ eventlog.Event, d StateData) error {
	if d.From != f.state {
		return bad(line, ReasonIllegalTransition, "state.changed from %s, but the run is %s", d.From, f.state)
	}
	if err := f.checkImplementingSupersede(line, d); err != nil {
		return err
	}
	if err := f.move(line, d.To); err != nil {
		return err
	}
	f.due = nil
	switch d.To {
	case Superseded:
		f.supersededBy = d.By
	case Stale:
		f.stale = &d
	}
	return nil
}

// StaleChange returns the state.changed that moved the run to STALE (its
// reason and the work tree it observed then), or nil when it never was.
func (f *Folder) StaleChange() *StateData {
	if f.stale == nil {
		return nil
	}
	d := *f.stale
	if d.Worktree != nil {
		w := *d.Worktree
		w.Changes = slices.Clone(w.Changes)
		d.Worktree = &w
	}
	return &d
}

func (f *Folder) applyCheckStarted(line int, _ eventlog.Event, d CheckStartedData) error {
	chk, ok := f.c.Check(d.Check)
	if !ok {
		return bad(line, ReasonBadEvent, "check %q is not in the contract", d.Check)
	}
	if f.state != Verifying {
		return bad(line, ReasonIllegalTransition, "check %q started while %s", d.Check, f.state)
	}
	if _, done := f.results[d.Check]; done || f.pending[d.Check] {
		return bad(line, ReasonBadEvent, "check %q started twice", d.Check)
	}
	for _, dep := range chk.DependsOn {
		if r, ok := f.results[dep]; !ok || r.Outcome != runtime.Passed {
			return bad(line, ReasonBadEvent, "check %q started before its dependency %q passed", d.Check, dep)
		}
	}
	f.pending[d.Check] = true
	return nil
}

func (f *Folder) applyCheckFinished(line int, _ eventlog.Event, d CheckFinishedData) error {
	chk, ok := f.c.Check(d.Check)
	if !ok {
		return bad(line, ReasonBadEvent, "check %q is not in the contract", d.Check)
	}
	if f.state != Verifying {
		return bad(line, ReasonIllegalTransition, "check %q finished while %s", d.Check, f.state)
	}
	if _, done := f.results[d.Check]; done {
		return bad(line, ReasonBadEvent, "check %q finished twice", d.Check)
	}
	if !d.Outcome.Valid() || d.Outcome == runtime.Interrupted {
		return bad(line, ReasonBadEvent, "check %q: outcome %q", d.Check, d.Outcome)
	}
	if !f.pending[d.Check] && d.Outcome != runtime.Skipped {
		return bad(line, ReasonBadEvent, "check %q finished without check.started", d.Check)
	}
	if d.Outcome == runtime.Passed {
		if why := passedInconsistency(chk, d); why != "" {
			return bad(line, ReasonBadEvent, "check %q passed, but %s", d.Check, why)
		}
	}
	if why := productsInconsistency(chk, d); why != "" {
		return bad(line, ReasonBadEvent, "check %q: %s", d.Check, why)
	}
	delete(f.pending, d.Check)
	for _, s := range []*runtime.Stream{d.Stdout, d.Stderr} {
		if s != nil {
			if !digestRE.MatchString(s.Digest) {
				return bad(line, ReasonBadEvent, "check %q: evidence digest %q is not sha256:<64 hex>", d.Check, s.Digest)
			}
			f.blobs[s.Digest] = true
		}
	}
	f.results[d.Check] = CheckReport{ID: d.Check, Outcome: d.Outcome, ExitCode: d.ExitCode, DurationMS: d.DurationMS,
		Stdout: d.Stdout, Stderr: d.Stderr, Attestation: d.Attestation, Detail: d.Detail, Products: d.Products}
	return nil
}

func (f *Folder) applyVerification(line int, _ eventlog.Event, d VerificationData) error {
	if f.state != Verifying {
		return bad(line, ReasonIllegalTransition, "verification completed while %s", f.state)
	}
	if f.verified {
		return bad(line, ReasonBadEvent, "verification completed twice")
	}
	if len(f.pending) > 0 || len(f.results) != len(f.c.Checks) {
		return bad(line, ReasonBadEvent, "verification completed with %d of %d checks finished", len(f.results), len(f.c.Checks))
	}
	if err := f.shardsComplete(line); err != nil {
		return err
	}
	f.collect()
	want, err := VerificationDigest(&f.r)
	if err != nil {
		return err
	}
	if d.Digest != want {
		return bad(line, ReasonDigest, "recorded %s, recomputed %s", d.Digest, want)
	}
	passed := true
	for _, c := range f.r.Checks {
		passed = passed && c.Outcome == runtime.Passed
	}
	if d.Passed != passed {
		return bad(line, ReasonDigest, "recorded passed=%v, the outcomes say %v", d.Passed, passed)
	}
	f.r.VerificationDigest = d.Digest
	f.verified, f.worktree = true, d.Worktree
	return nil
}

func (f *Folder) applyApproval(line int, e eventlog.Event, d ApprovalData) error {
	if f.state != AwaitingApproval {
		return bad(line, ReasonDecision, "decision recorded while %s", f.state)
	}
	switch {
	case d.VerificationDigest != f.r.VerificationDigest:
		return bad(line, ReasonDecision, "decision binds verification %s, the run has %s", d.VerificationDigest, f.r.VerificationDigest)
	case d.Contract != f.r.ContractHash:
		return bad(line, ReasonDecision, "decision binds contract %s", d.Contract)
	case d.Source.Commit != f.r.Source.Commit || d.Source.Tree != f.r.Source.Tree:
		return bad(line, ReasonDecision, "decision binds source %s", d.Source.Commit)
	case d.Actor == "":
		return bad(line, ReasonDecision, "decision without actor")
	}
	v := approval.Decision(d.Decision)
	if !v.Valid() {
		return bad(line, ReasonDecision, "decision %q", d.Decision)
	}
	f.approvals.Add(d.GitHub.Identity(d.Actor), v)
	next := AwaitingApproval
	switch {
	case v == approval.Rejected:
		next = Rejected
	case f.completes():
		next = Complete
	}
	// A held approval (run.DecisionOptions.Hold) stays AWAITING_APPROVAL
	// although the approvals reach approval.required: more approvals of the
	// same evaluation follow, and the last one completes the run. Holding
	// never completes or rejects anything.
	held := v == approval.Approved && next == Complete && d.State == AwaitingApproval
	if d.State != next && !held {
		return bad(line, ReasonDecision, "decision says it moves the run to %s, the replay says %s", d.State, next)
	}
	if held {
		next = AwaitingApproval
	}
	f.r.Decisions = append(f.r.Decisions, Decision{Decision: d.Decision, Actor: d.Actor, Time: e.Time, Reason: d.Reason, GitHub: d.GitHub})
	f.due = nil
	if next != AwaitingApproval {
		f.due = &StateData{From: AwaitingApproval, To: next, Actor: d.Actor, Reason: d.Reason}
	}
	return nil
}

func (f *Folder) applyContext(line int, _ eventlog.Event, d ContextData) error {
	if f.state != Planned {
		return bad(line, ReasonBadEvent, "context attached while %s", f.state)
	}
	if !digestRE.MatchString(d.Blob) {
		return bad(line, ReasonBadEvent, "context blob %q is not sha256:<64 hex>", d.Blob)
	}
	f.blobs[d.Blob] = true
	return nil
}

// applyBudget records budget.exceeded; its data is not read by the replay.
func (f *Folder) applyBudget(int, eventlog.Event) error {
	f.budgetHit = true
	return nil
}
