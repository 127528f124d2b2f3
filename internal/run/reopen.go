package run

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// Release ends a lock hold as Close does (staged events written, the
// projection when it matters, the lock released) but keeps what the run
// verified, so that Reopen takes it up again reading only the events
// appended meanwhile. After a failed Release the run must not be reopened.
func (r *Run) Release() error {
	var errs []error
	if err := r.log.Flush(); err != nil {
		errs = append(errs, err)
	} else if r.lagging {
		errs = append(errs, r.writeProjection())
	}
	errs = append(errs, r.log.Suspend())
	if r.lk != nil {
		errs = append(errs, r.lk.Release())
		if r.lk.Kept() {
			r.kept = r.lk
		}
		r.lk = nil
	}
	return errors.Join(errs...)
}

// Discard drops what a Release kept for Reopen (the writer lock's owner
// file, lock.AcquireKept): for a released run that will not be reopened.
func (r *Run) Discard() {
	if r.kept != nil {
		r.kept.Discard()
		r.kept = nil
	}
}

// retake takes the writer lock for Reopen: the kept lock again with one
// link(2) (lock.Retake), or a new kept one. Another live owner holding it
// is a *lock.HeldError, which Reopen waits on.
func (r *Run) retake() (*lock.Lock, error) {
	if r.kept != nil {
		err := r.kept.Retake()
		var held *lock.HeldError
		if err == nil || errors.As(err, &held) {
			return r.kept, err
		}
		r.Discard() // unusable: start afresh
	}
	lk, err := lock.AcquireKept(filepath.Join(r.Dir, LockFile))
	if err == nil {
		r.kept = lk
	}
	return lk, err
}

// Reopen re-takes the writer lock of prev, a run this process opened and
// Released, waiting as OpenWait does. It checks that the log still ends,
// at the size prev verified, with the line prev verified last
// (eventlog.Log.Resume), verifies and replays only the events appended
// since (a decision by another process, say) and completes a due decision
// as Open does. While a session is open run.json is not compared: the
// session's events are not projected (ADR 0019). Anything else — a
// shorter or rewritten log, a torn tail, a recovery, no session open any
// more — falls back to a full Open under the same lock hold, which
// verifies everything and refuses what it refuses. With prev nil (or
// still holding its lock) Reopen is OpenWait.
func Reopen(prev *Run, stateDir, id string, wait time.Duration) (*Run, error) {
	if prev == nil || prev.lk != nil || prev.log == nil {
		return OpenWait(stateDir, id, wait)
	}
	return retryHeld(wait, func() (*Run, error) {
		lk, err := prev.retake()
		if err != nil {
			return nil, err
		}
		prev.kept = nil // lk is held now: whoever holds it keeps or discards it
		r, err := prev.resume(lk)
		if err != nil {
			lk.Discard()
		}
		return r, err
	})
}

// resume is Reopen's work once lk is held; on failure lk is released.
func (r *Run) resume(lk *lock.Lock) (*Run, error) {
	base := r.log.Len()
	added, err := r.log.Resume()
	switch {
	case errors.Is(err, eventlog.ErrChanged):
		return openLocked(r.Dir, r.ID, lk)
	case err != nil:
		lk.Release()
		return nil, err
	}
	for i, e := range added {
		if err := r.fold.Apply(base+i+1, e); err != nil {
			r.log.Close()
			lk.Release()
			return nil, err
		}
	}
	if !r.fold.SessionOpen() {
		if err := r.log.Close(); err != nil {
			lk.Release()
			return nil, fmt.Errorf("reopen: %w", err)
		}
		return openLocked(r.Dir, r.ID, lk)
	}
	r.lk = lk
	if err := r.completeDecision(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}
