package run

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/kernel/canon"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/runtime"
	"github.com/proofgate/proofgate/kernel/strictjson"
)

// AuditError is a run that does not reconcile: the log, the projection, the
// frozen contract or the evidence disagree. Callers refuse (exit 1).
type AuditError struct {
	Reason AuditReason
	Line   int // the event line concerned, 0 when none
	Detail string
	Err    error // the underlying typed error, e.g. an *eventlog.ChainError
}

// Unwrap returns the underlying typed error.
func (e *AuditError) Unwrap() error { return e.Err }

// Is reports whether target is exit.Refused, the class of a run that does
// not reconcile.
func (e *AuditError) Is(target error) bool { return target == exit.Refused }

// AuditReason is the typed cause of an AuditError.
type AuditReason string

// Audit reasons.
const (
	ReasonChain             AuditReason = "chain"              // the event log itself is refused (see eventlog reasons)
	ReasonContract          AuditReason = "contract-mismatch"  // contract.json does not match the log's binding
	ReasonIllegalTransition AuditReason = "illegal-transition" // a state change the lifecycle forbids
	ReasonUnknownEvent      AuditReason = "unknown-event"
	ReasonBadEvent          AuditReason = "bad-event"           // an event whose data does not fit the run
	ReasonDigest            AuditReason = "verification-digest" // a recorded verification digest is not the recomputed one
	ReasonDecision          AuditReason = "decision"            // a decision that does not bind to the verification
	ReasonProjection        AuditReason = "projection-tampered" // run.json disagrees with the log
	ReasonBlob              AuditReason = "blob"                // referenced evidence missing or altered
	ReasonMissing           AuditReason = "missing-file"
)

func (e *AuditError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("run does not reconcile: %s at event line %d: %s", e.Reason, e.Line, e.Detail)
	}
	return fmt.Sprintf("run does not reconcile: %s: %s", e.Reason, e.Detail)
}

// folder replays a log into a Report, refusing what the lifecycle forbids.
type folder struct {
	c         *contract.Resolved
	r         Report
	state     State
	pending   map[string]bool // started, not finished
	results   map[string]CheckReport
	approvals map[string]bool // approver identities (see approverKeys) since the verification
	approvers int             // distinct approving persons
	rejected  bool
	verified  bool   // a verification.completed was replayed
	worktree  string // the work-tree digest it recorded
	budgetHit bool   // a budget.exceeded was replayed
	blobs     map[string]bool
	planned   PlannedData
	// due is the state change the last decision moves the run to, until a
	// state.changed is replayed: a writer killed between approval.recorded
	// and its state.changed leaves it for the next writer (completeDecision).
	due *StateData
	// supersededBy is the run a SUPERSEDED transition names.
	supersededBy string
}

// digestRE is the only shape a blob reference may have: anything else could
// name a path outside blobs/ or crash a reader slicing off the prefix.
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// approverKeys are the identities a decision speaks for: its actor, case
// folded (GitHub logins are case-insensitive), and for a GitHub review the
// reviewer's immutable numeric id (a login can be renamed). One person
// counts once however many of these it shows.
func approverKeys(actor string, gh *GitHubReview) []string {
	keys := []string{"actor:" + strings.ToLower(strings.TrimSpace(actor))}
	if gh != nil {
		keys = append(keys, "github-id:"+strconv.FormatInt(gh.UserID, 10), "actor:"+strings.ToLower(strings.TrimSpace(gh.Login)))
	}
	return keys
}

// approvedBy reports whether any identity of the decision already approved.
func (f *folder) approvedBy(actor string, gh *GitHubReview) bool {
	for _, k := range approverKeys(actor, gh) {
		if f.approvals[k] {
			return true
		}
	}
	return false
}

func newFolder(c *contract.Resolved) *folder {
	return &folder{c: c, pending: map[string]bool{}, results: map[string]CheckReport{}, approvals: map[string]bool{}, blobs: map[string]bool{}}
}

func bad(line int, reason AuditReason, format string, a ...any) *AuditError {
	return &AuditError{Reason: reason, Line: line, Detail: fmt.Sprintf(format, a...)}
}

func (f *folder) apply(line int, e eventlog.Event) error {
	f.r.LastEventTime = e.Time
	if line == 1 {
		if e.Type != TypePlanned {
			return bad(line, ReasonBadEvent, "first event is %q, want %s", e.Type, TypePlanned)
		}
		f.r.RunID, f.r.Source, f.r.ContractHash = e.Run, e.Source, e.Contract
	}
	switch e.Type {
	case TypePlanned:
		if line != 1 {
			return bad(line, ReasonBadEvent, "%s after line 1", e.Type)
		}
		if err := strictJSON(e.Data, &f.planned); err != nil {
			return bad(line, ReasonBadEvent, "run.planned: %v", err)
		}
		if f.planned.Contract.Hash != e.Contract {
			return bad(line, ReasonContract, "run.planned names contract %s, the line is bound to %s", f.planned.Contract.Hash, e.Contract)
		}
		if w := f.planned.Worktree; w.Commit != e.Source.Commit || w.Tree != e.Source.Tree {
			return bad(line, ReasonBadEvent, "run.planned binds commit %s tree %s, the log is bound to commit %s tree %s", w.Commit, w.Tree, e.Source.Commit, e.Source.Tree)
		}
		if f.planned.Worktree.Dirty && !f.planned.AllowDirty {
			return bad(line, ReasonBadEvent, "run.planned on a dirty work tree without allow_dirty")
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
		return f.move(line, Planned)
	case TypeState:
		var d StateData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "state.changed: %v", err)
		}
		if d.From != f.state {
			return bad(line, ReasonIllegalTransition, "state.changed from %s, but the run is %s", d.From, f.state)
		}
		if err := f.move(line, d.To); err != nil {
			return err
		}
		f.due = nil
		if d.To == Superseded {
			f.supersededBy = d.By
		}
	case TypeCheckStarted:
		var d CheckStartedData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "check.started: %v", err)
		}
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
	case TypeCheckFinished:
		var d CheckFinishedData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "check.finished: %v", err)
		}
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
			Stdout: d.Stdout, Stderr: d.Stderr, Attestation: d.Attestation, Detail: d.Detail}
	case TypeVerification:
		var d VerificationData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "verification.completed: %v", err)
		}
		if f.state != Verifying {
			return bad(line, ReasonIllegalTransition, "verification completed while %s", f.state)
		}
		if f.verified {
			return bad(line, ReasonBadEvent, "verification completed twice")
		}
		if len(f.pending) > 0 || len(f.results) != len(f.c.Checks) {
			return bad(line, ReasonBadEvent, "verification completed with %d of %d checks finished", len(f.results), len(f.c.Checks))
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
	case TypeApproval:
		var d ApprovalData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "approval.recorded: %v", err)
		}
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
		var next State
		switch d.Decision {
		case "approved":
			if !f.approvedBy(d.Actor, d.GitHub) {
				f.approvers++
			}
			for _, k := range approverKeys(d.Actor, d.GitHub) {
				f.approvals[k] = true
			}
			next = AwaitingApproval
			if !f.rejected && f.approvers >= f.c.Approval.Required {
				next = Complete
			}
		case "rejected":
			f.rejected = true
			next = Rejected
		default:
			return bad(line, ReasonDecision, "decision %q", d.Decision)
		}
		if d.State != next {
			return bad(line, ReasonDecision, "decision says it moves the run to %s, the replay says %s", d.State, next)
		}
		f.r.Decisions = append(f.r.Decisions, Decision{Decision: d.Decision, Actor: d.Actor, Time: e.Time, Reason: d.Reason, GitHub: d.GitHub})
		f.due = nil
		if next != AwaitingApproval {
			f.due = &StateData{From: AwaitingApproval, To: next, Actor: d.Actor, Reason: d.Reason}
		}
	case TypeContext:
		var d ContextData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "context.attached: %v", err)
		}
		if f.state != Planned {
			return bad(line, ReasonBadEvent, "context attached while %s", f.state)
		}
		if !digestRE.MatchString(d.Blob) {
			return bad(line, ReasonBadEvent, "context blob %q is not sha256:<64 hex>", d.Blob)
		}
		f.blobs[d.Blob] = true
	case TypeBudget:
		f.budgetHit = true
	case TypeLockBroken, TypeCheckpoint, TypeRecovered:
		// Recorded facts that change no state.
	default:
		return bad(line, ReasonUnknownEvent, "event type %q", e.Type)
	}
	return nil
}

func (f *folder) move(line int, to State) error {
	if !CanTransition(f.state, to) {
		return &AuditError{Reason: ReasonIllegalTransition, Line: line, Detail: (&TransitionError{f.state, to}).Error()}
	}
	switch to {
	case Complete:
		if f.rejected || f.approvers < f.c.Approval.Required {
			return bad(line, ReasonDecision, "COMPLETE with %d of %d approvals", f.approvers, f.c.Approval.Required)
		}
	case Rejected:
		if !f.rejected {
			return bad(line, ReasonDecision, "REJECTED without a rejection")
		}
	case AwaitingApproval:
		if f.r.VerificationDigest == "" {
			return bad(line, ReasonIllegalTransition, "AWAITING_APPROVAL before verification")
		}
		if f.worktree != f.planned.Worktree.Digest {
			return bad(line, ReasonIllegalTransition, "AWAITING_APPROVAL, but the verification saw work tree %s, the run was planned on %s", f.worktree, f.planned.Worktree.Digest)
		}
		if f.budgetHit {
			return bad(line, ReasonIllegalTransition, "AWAITING_APPROVAL after budget.exceeded")
		}
		for _, c := range f.r.Checks {
			if c.Outcome != runtime.Passed {
				return bad(line, ReasonIllegalTransition, "AWAITING_APPROVAL with check %q %s", c.ID, c.Outcome)
			}
		}
	}
	f.state = to
	return nil
}

// passedInconsistency says why a check.finished claiming "passed" cannot be
// true of check c, or "" when it can: passed means exit 0, observed by the
// runtime the contract names, and for structured evidence a proving report.
func passedInconsistency(c contract.Check, d CheckFinishedData) string {
	switch {
	case d.ExitCode != 0:
		return fmt.Sprintf("exit code %d", d.ExitCode)
	case d.Attestation == nil:
		return "no runtime attestation"
	case d.Attestation.Provider != c.Runtime:
		return fmt.Sprintf("the attestation names runtime %q, the contract %q", d.Attestation.Provider, c.Runtime)
	}
	for _, s := range []*runtime.Stream{d.Stdout, d.Stderr} {
		if s != nil && s.Truncated {
			return "its output was truncated"
		}
	}
	if c.Evidence == "structured" {
		if d.Structured == nil || d.Structured.Status != "passed" {
			return "structured evidence without a passing report"
		}
		for _, want := range c.Criteria {
			if !slices.Contains(d.Structured.Criteria, want) {
				return fmt.Sprintf("the report does not cover criterion %q", want)
			}
		}
	}
	return ""
}

// collect orders the results by the contract's check order.
func (f *folder) collect() {
	f.r.Checks = f.r.Checks[:0]
	for _, c := range f.c.Checks {
		if r, ok := f.results[c.ID]; ok {
			f.r.Checks = append(f.r.Checks, r)
		}
	}
}

func (f *folder) report(n int, head string) *Report {
	f.collect()
	r := f.r
	r.Checks = slices.Clone(f.r.Checks)
	if r.Checks == nil {
		r.Checks = []CheckReport{}
	}
	r.State = f.state
	r.ChainLength, r.ChainHead = n, head
	for c := range f.pending {
		r.Pending = append(r.Pending, c)
	}
	slices.Sort(r.Pending)
	r.Blobs = nil
	for b := range f.blobs {
		r.Blobs = append(r.Blobs, b)
	}
	slices.Sort(r.Blobs)
	return &r
}

// Fold replays events against the frozen contract into a Report.
func Fold(c *contract.Resolved, events []eventlog.Event) (*Report, error) {
	f := newFolder(c)
	for i, e := range events {
		if err := f.apply(i+1, e); err != nil {
			return nil, err
		}
	}
	return f.report(len(events), headOf(events)), nil
}

func headOf(events []eventlog.Event) string {
	if len(events) == 0 {
		return ""
	}
	return events[len(events)-1].Hash
}

// VerificationDigest is "sha256:" + SHA-256 of the canonical JSON of the
// run id, contract hash, source and every check's recorded result.
func VerificationDigest(r *Report) (string, error) {
	checks := r.Checks
	if checks == nil {
		checks = []CheckReport{}
	}
	return canon.Digest(struct {
		Run      string          `json:"run"`
		Contract string          `json:"contract"`
		Source   eventlog.Source `json:"source"`
		Checks   []CheckReport   `json:"checks"`
	}{r.RunID, r.ContractHash, r.Source, checks})
}

// strictJSON decodes event data, run.json and contract.json: closed
// formats, read by the one shared strict decoder.
func strictJSON(b []byte, v any) error { return strictjson.Decode(b, v) }
