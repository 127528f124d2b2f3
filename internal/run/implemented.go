package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ImplementedByReason is the typed cause of an ImplementedByError.
type ImplementedByReason string

// Reasons a successor of an implementation run is refused.
const (
	// ImplNotImplementing: the named run is not IMPLEMENTING (and not an
	// implementation run whose successor's planning was interrupted).
	ImplNotImplementing ImplementedByReason = "not-implementing"
	// ImplSessionOpen: a session of the named run is still open.
	ImplSessionOpen ImplementedByReason = "session-open"
	// ImplContract: the successor's contract is not the implementation
	// run's (a pull request cannot swap contracts between implementing and
	// verifying).
	ImplContract ImplementedByReason = "contract-mismatch"
	// ImplSucceeded: the named run already has a successor that moved on.
	ImplSucceeded ImplementedByReason = "already-succeeded"
	// ImplOptions: implemented_by combined with supersedes.
	ImplOptions ImplementedByReason = "bad-options"
)

// ImplementedByError refuses planning a successor of implementation run
// Run. It is of class exit.Refused.
type ImplementedByError struct {
	Run    string
	Reason ImplementedByReason
	Detail string
}

func (e *ImplementedByError) Error() string {
	return fmt.Sprintf("cannot verify implementation run %s: %s: %s", e.Run, e.Reason, e.Detail)
}

// Is reports whether target is exit.Refused.
func (e *ImplementedByError) Is(target error) bool { return target == exit.Refused }

// planImplemented plans the successor of implementation run o.ImplementedBy
// (ADR 0017): the implementation run must be IMPLEMENTING with every
// session ended and share o's contract; the successor records its chain
// head and length, source and contract in implemented_by, and the
// implementation run moves to SUPERSEDED by it just before the successor
// becomes visible (as Retry does). Planning the successor again after a
// kill finishes it: the successor the implementation run names is planned
// afresh when absent, and returned when it is still PLANNED.
func planImplemented(ctx context.Context, o PlanOptions) (*Run, error) {
	if o.Supersedes != "" {
		return nil, &ImplementedByError{Run: o.ImplementedBy, Reason: ImplOptions, Detail: "a run is planned either as a retry (supersedes) or as an implementation's successor, not both"}
	}
	if o.Implement {
		return nil, &ImplementedByError{Run: o.ImplementedBy, Reason: ImplOptions, Detail: "a successor verifies the implementation; it is not itself implemented in (plan another run with --implement for more agent work)"}
	}
	impl, err := Open(o.StateDir, o.ImplementedBy)
	if err != nil {
		return nil, err
	}
	defer impl.Close()
	o.ImplementedBy = impl.ID
	if err := impl.sameContract(o); err != nil {
		return nil, err
	}
	switch st := impl.State(); st {
	case replay.Implementing:
		if open := impl.openSessions(); len(open) > 0 {
			return nil, &ImplementedByError{Run: impl.ID, Reason: ImplSessionOpen, Detail: fmt.Sprintf("session %s is open; end every session first ('proofgate session end %s')", joinComma(open), impl.ID)}
		}
		o.implemented = impl.implementation(0)
		o.publish = func(id string) error { return impl.supersedeImplementation(id) }
		return Plan(ctx, o)
	case replay.Superseded:
		return impl.resumeSuccessor(ctx, o)
	default:
		return nil, &ImplementedByError{Run: impl.ID, Reason: ImplNotImplementing, Detail: fmt.Sprintf("the run is %s; only an IMPLEMENTING run is verified by a successor", st)}
	}
}

// sameContract refuses a successor whose contract is not the
// implementation run's.
func (r *Run) sameContract(o PlanOptions) error {
	frozen, err := o.Contract.Canonical()
	if err != nil {
		return err
	}
	r.mu.Lock()
	have := r.fold.ContractHash()
	r.mu.Unlock()
	if want := canon.SumBytes(frozen); want != have {
		return &ImplementedByError{Run: r.ID, Reason: ImplContract, Detail: fmt.Sprintf("the implementation ran under contract %s, this plan resolves %s; implementation and verification share one contract", have, want)}
	}
	return nil
}

// implementation is the implemented_by record of the run's chain without
// its last drop events (1 when the log already ends with the supersession).
func (r *Run) implementation(drop int) *replay.ImplementedBy {
	r.mu.Lock()
	defer r.mu.Unlock()
	events := r.log.Events()
	events = events[:len(events)-drop]
	src := r.fold.Source()
	return &replay.ImplementedBy{Run: r.ID, Head: replay.HeadOf(events), Length: len(events),
		Source: replay.Source{Commit: src.Commit, Tree: src.Tree}, Contract: r.fold.ContractHash()}
}

// supersedeImplementation moves the IMPLEMENTING run to SUPERSEDED by its
// successor by.
func (r *Run) supersedeImplementation(by string) error {
	return r.transition(replay.Superseded, replay.StateData{By: by, Reason: "implementation verified by " + by})
}

// resumeSuccessor finishes a successor whose planning was interrupted
// after the implementation run recorded its supersession.
func (r *Run) resumeSuccessor(ctx context.Context, o PlanOptions) (*Run, error) {
	last, ok := r.lastState()
	if !ok || last.From != replay.Implementing {
		return nil, &ImplementedByError{Run: r.ID, Reason: ImplNotImplementing, Detail: "the run is SUPERSEDED, and not as an implementation run"}
	}
	_, err := NewStore(o.StateDir).Resolve(last.By)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		o.id, o.implemented = last.By, r.implementation(1) // the earlier plan died before publishing it
		return Plan(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	next, err := Open(o.StateDir, last.By)
	if err != nil {
		return nil, err
	}
	if st := next.State(); st != replay.Planned || next.Planned.ImplementedBy == nil || next.Planned.ImplementedBy.Run != r.ID {
		next.Close()
		return nil, &ImplementedByError{Run: r.ID, Reason: ImplSucceeded, Detail: fmt.Sprintf("its successor %s is %s", last.By, st)}
	}
	return next, nil
}

// lastState is the data of the log's last event when it is a
// state.changed.
func (r *Run) lastState() (replay.StateData, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events := r.log.Events()
	e := events[len(events)-1]
	var d replay.StateData
	if e.Type != replay.TypeState || strictjson.Decode(e.Data, &d) != nil {
		return replay.StateData{}, false
	}
	return d, true
}
