package run

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Status is a reconciled report plus what only the live directory shows:
// the writer lock, interrupted checks and staleness.
type Status struct {
	*replay.Report
	// Writer is the lock holder, if a lock file exists.
	Writer *Writer `json:"writer,omitempty"`
	// Interrupted lists checks that started and never finished while no
	// live writer holds the run: the harness died mid-check.
	Interrupted []string `json:"interrupted,omitempty"`
	// TornTail is set when the log ends in a partial line (a writer was
	// killed mid-append); the next writer records its recovery.
	TornTail bool `json:"torn_tail,omitempty"`
	// StaleReasons says why the run just became STALE (this inspection
	// found the change).
	StaleReasons []string `json:"stale_reasons,omitempty"`
	// Stale says why a STALE run is STALE, as its log recorded it, however
	// long ago that was.
	Stale *StaleInfo `json:"stale,omitempty"`
	// ProjectionLag is set when run.json trails the log (repaired by the
	// next writer); it is not tampering.
	ProjectionLag bool `json:"projection_lagging,omitempty"`
	// DecisionPending is the state change of a recorded decision whose
	// writer died before recording it (the run still reads
	// AWAITING_APPROVAL); the next writer records it.
	DecisionPending *replay.StateData `json:"decision_pending,omitempty"`
	// Archived is set for a run read from its archive (internal/retention).
	Archived *ArchiveInfo `json:"archived,omitempty"`
}

// Writer describes a run's lock holder.
type Writer struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Created time.Time `json:"created"`
	Alive   bool      `json:"alive"`
}

// Inspect reconciles run id and reports it. A run whose log, projection or
// evidence disagree returns the *AuditError. When the code or contract moved
// since planning and no live writer holds the run, it is moved to STALE.
func Inspect(ctx context.Context, stateDir, id string, fresh Freshness) (*Status, error) {
	store := NewStore(stateDir)
	id, err := store.Resolve(id)
	if err != nil {
		return nil, err
	}
	dir := store.Path(id)
	recoverPrune(stateDir)
	if retention.IsArchived(dir) {
		return inspectArchived(ctx, dir)
	}
	st := &Status{}
	if o, err := lock.Read(filepath.Join(dir, LockFile)); err == nil {
		st.Writer = &Writer{PID: o.PID, Host: o.Host, Created: o.Created, Alive: lock.Alive(o)}
	}
	rep, f, err := replay.AuditReplay(dir)
	switch {
	case err == nil:
	case replay.IsReason(err, replay.ReasonProjectionLag):
		st.ProjectionLag = true
	default:
		// A damaged tail (a writer killed mid-append): replay the intact
		// lines and report it; the next writer records its recovery.
		var ok bool
		var ierr error
		rep, f, ok, ierr = replay.AuditIntact(dir)
		if !ok {
			return nil, err
		}
		if ierr != nil && !replay.IsReason(ierr, replay.ReasonProjectionLag) {
			return nil, ierr
		}
		st.TornTail, st.ProjectionLag = true, ierr != nil
	}
	st.Report = rep
	liveWriter := st.Writer != nil && st.Writer.Alive
	if !liveWriter {
		st.Interrupted = rep.Pending
	}
	if d := f.Due(); d != nil && f.State() == d.From {
		st.DecisionPending = d
		if !liveWriter {
			// Take the run over: Open records the decision's state change.
			if r, err := Open(stateDir, id); err == nil {
				st.Report, st.DecisionPending, st.TornTail, st.ProjectionLag = r.Report(), nil, false, false
				r.Close()
			}
		}
	}
	// IMPLEMENTING: an agent is changing the work tree by design; the
	// verification that follows binds what it leaves.
	if st.State == replay.Stale {
		st.Stale = staleInfo(f.StaleChange())
	}
	if st.State.Terminal() || st.State == replay.Stale || st.State == replay.Blocked || st.State == replay.Implementing || st.DecisionPending != nil {
		return st, nil
	}
	ferr := checkFresh(ctx, f.Planned(), fresh)
	var se *StaleError
	if !errors.As(ferr, &se) {
		return st, ferr
	}
	st.StaleReasons = se.Reasons
	if liveWriter {
		return st, nil // report it; the live writer will find it too
	}
	r, err := Open(stateDir, id)
	if err != nil {
		return st, nil // could not take the run over; the report stands
	}
	defer r.Close()
	if err := r.MarkStaleIfChanged(ctx, fresh); err != nil && !errors.As(err, &se) {
		return st, err
	}
	st.Report, st.Stale = r.Report(), r.Stale()
	return st, nil
}

func isTorn(err error) bool {
	var ce *eventlog.ChainError
	return errors.As(err, &ce) && ce.Reason == eventlog.TornTail
}
