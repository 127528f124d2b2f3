package replay

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/runtime"
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

// Folder replays a log into a Report, refusing what the lifecycle forbids.
type Folder struct {
	c         *contract.Resolved
	r         Report
	state     State
	pending   map[string]bool // started, not finished
	results   map[string]CheckReport
	approvals approval.Tally
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
	// stale is the state.changed that moved the run to STALE, nil before.
	stale *StateData
	// s is the replay of agent sessions (session_fold.go), nil before the
	// first session event.
	s *sessionFold
	// dry: the session rules check an event without applying it (Try).
	dry bool
	// collections are the evidence collections recorded (evidence.go).
	collections map[string]EvidenceCollectedData
	verdicts    map[string]bool // collections with an evidence.verdict
	// sh is the replay of merged shards (shard_fold.go), nil before the
	// first shard.merged.
	sh *shardFold
}

// digestRE is the only shape a blob reference may have: anything else could
// name a path outside blobs/ or crash a reader slicing off the prefix.
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// verdict measures the decisions replayed against the contract.
func (f *Folder) verdict() approval.Verdict {
	return approval.Requirement{Required: f.c.Approval.Required}.Of(&f.approvals)
}

// NewFolder returns a folder that replays a log against the frozen
// contract c.
func NewFolder(c *contract.Resolved) *Folder {
	return &Folder{c: c, pending: map[string]bool{}, results: map[string]CheckReport{}, blobs: map[string]bool{}}
}

func bad(line int, reason AuditReason, format string, a ...any) *AuditError {
	return &AuditError{Reason: reason, Line: line, Detail: fmt.Sprintf(format, a...)}
}

// Apply replays event e, line line of the log.
func (f *Folder) Apply(line int, e eventlog.Event) error {
	f.r.LastEventTime = e.Time
	if line == 1 {
		if e.Type != TypePlanned {
			return bad(line, ReasonBadEvent, "first event is %q, want %s", e.Type, TypePlanned)
		}
		f.r.RunID, f.r.Source, f.r.ContractHash = e.Run, e.Source, e.Contract
	}
	t, ok := eventTypes[e.Type]
	switch {
	case !ok:
		return bad(line, ReasonUnknownEvent, "event type %q", e.Type)
	case t.first && line != 1:
		return bad(line, ReasonBadEvent, "%s after line 1", e.Type)
	}
	return t.apply(f, line, e)
}

func (f *Folder) move(line int, to State) error {
	if !CanTransition(f.state, to) {
		return &AuditError{Reason: ReasonIllegalTransition, Line: line, Detail: (&TransitionError{f.state, to}).Error()}
	}
	if f.state == Implementing {
		if err := f.leaveImplementing(line, to); err != nil {
			return err
		}
	}
	switch to {
	case Complete:
		if v := f.verdict(); v.Decision != approval.Approved {
			return bad(line, ReasonDecision, "COMPLETE with %d of %d approvals", v.Approvals, v.Required)
		}
		if !f.authorizationSatisfied() {
			return bad(line, ReasonDecision, "COMPLETE without the authorization the contract requires")
		}
	case Rejected:
		if !f.approvals.Rejected() {
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
func (f *Folder) collect() {
	f.r.Checks = f.r.Checks[:0]
	for _, c := range f.c.Checks {
		if r, ok := f.results[c.ID]; ok {
			f.r.Checks = append(f.r.Checks, r)
		}
	}
}

func (f *Folder) Report(n int, head string) *Report {
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
	r.Sessions = f.Sessions()
	return &r
}

// Fold replays events against the frozen contract into a Report.
func Fold(c *contract.Resolved, events []eventlog.Event) (*Report, error) {
	f := NewFolder(c)
	for i, e := range events {
		if err := f.Apply(i+1, e); err != nil {
			return nil, err
		}
	}
	return f.Report(len(events), headOf(events)), nil
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
