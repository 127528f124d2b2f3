package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/proofgate/proofgate/kernel/canon"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// AuditError is a run that does not reconcile: the log, the projection, the
// frozen contract or the evidence disagree. Callers refuse (exit 1).
type AuditError struct {
	Reason string // a code from the Reason* constants
	Line   int    // the event line concerned, 0 when none
	Detail string
	Err    error // the underlying typed error, e.g. an *eventlog.ChainError
}

// Unwrap returns the underlying typed error.
func (e *AuditError) Unwrap() error { return e.Err }

// Audit reasons.
const (
	ReasonChain             = "chain"              // the event log itself is refused (see eventlog reasons)
	ReasonContract          = "contract-mismatch"  // contract.json does not match the log's binding
	ReasonIllegalTransition = "illegal-transition" // a state change the lifecycle forbids
	ReasonUnknownEvent      = "unknown-event"
	ReasonBadEvent          = "bad-event"           // an event whose data does not fit the run
	ReasonDigest            = "verification-digest" // a recorded verification digest is not the recomputed one
	ReasonDecision          = "decision"            // a decision that does not bind to the verification
	ReasonProjection        = "projection-tampered" // run.json disagrees with the log
	ReasonBlob              = "blob"                // referenced evidence missing or altered
	ReasonMissing           = "missing-file"
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
	approvals map[string]bool // actors that approved since the verification
	rejected  bool
	blobs     map[string]bool
	planned   PlannedData
}

func newFolder(c *contract.Resolved) *folder {
	return &folder{c: c, pending: map[string]bool{}, results: map[string]CheckReport{}, approvals: map[string]bool{}, blobs: map[string]bool{}}
}

func bad(line int, reason, format string, a ...any) *AuditError {
	return &AuditError{Reason: reason, Line: line, Detail: fmt.Sprintf(format, a...)}
}

func (f *folder) apply(line int, e eventlog.Event) error {
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
		f.r.Repo, f.r.Profile = f.planned.Repo, f.planned.Contract.Profile
		return f.move(line, Planned)
	case TypeState:
		var d StateData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "state.changed: %v", err)
		}
		if d.From != f.state {
			return bad(line, ReasonIllegalTransition, "state.changed from %s, but the run is %s", d.From, f.state)
		}
		return f.move(line, d.To)
	case TypeCheckStarted:
		var d CheckStartedData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "check.started: %v", err)
		}
		if _, ok := f.c.Check(d.Check); !ok {
			return bad(line, ReasonBadEvent, "check %q is not in the contract", d.Check)
		}
		if f.state != Verifying {
			return bad(line, ReasonIllegalTransition, "check %q started while %s", d.Check, f.state)
		}
		if _, done := f.results[d.Check]; done || f.pending[d.Check] {
			return bad(line, ReasonBadEvent, "check %q started twice", d.Check)
		}
		f.pending[d.Check] = true
	case TypeCheckFinished:
		var d CheckFinishedData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "check.finished: %v", err)
		}
		if _, ok := f.c.Check(d.Check); !ok {
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
		delete(f.pending, d.Check)
		for _, s := range []*runtime.Stream{d.Stdout, d.Stderr} {
			if s != nil {
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
		switch d.Decision {
		case "approved":
			f.approvals[d.Actor] = true
		case "rejected":
			f.rejected = true
		default:
			return bad(line, ReasonDecision, "decision %q", d.Decision)
		}
		f.r.Decisions = append(f.r.Decisions, Decision{Decision: d.Decision, Actor: d.Actor, Time: e.Time, Reason: d.Reason, GitHub: d.GitHub})
	case TypeContext:
		var d ContextData
		if err := strictJSON(e.Data, &d); err != nil {
			return bad(line, ReasonBadEvent, "context.attached: %v", err)
		}
		if f.state != Planned {
			return bad(line, ReasonBadEvent, "context attached while %s", f.state)
		}
		f.blobs[d.Blob] = true
	case TypeLockBroken, TypeBudget, TypeCheckpoint, TypeRecovered:
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
		if f.rejected || len(f.approvals) < f.c.Approval.Required {
			return bad(line, ReasonDecision, "COMPLETE with %d of %d approvals", len(f.approvals), f.c.Approval.Required)
		}
	case Rejected:
		if !f.rejected {
			return bad(line, ReasonDecision, "REJECTED without a rejection")
		}
	case AwaitingApproval:
		if f.r.VerificationDigest == "" {
			return bad(line, ReasonIllegalTransition, "AWAITING_APPROVAL before verification")
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

func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}
