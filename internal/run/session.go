package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// SessionOpenError refuses to leave IMPLEMENTING (exec, cancel, stale)
// while an agent session is open: end it first (or resume and end it).
type SessionOpenError struct {
	Run, Session string
	To           replay.State
}

func (e *SessionOpenError) Error() string {
	return fmt.Sprintf("run %s is IMPLEMENTING with session %s open: end the session (proofgate session end) before moving the run to %s", e.Run, e.Session, e.To)
}

// AppendSession records one session, turn or tool event (a type the
// event-type table lets replay.WriterSession write). The event is checked
// against the replay before it is written, so a refused event never
// reaches the log (the error is the replay's *AuditError). The event is
// staged: the session events of one lock hold are written with one write
// and one fsync, by Close (or the next non-session append), before the
// lock is released (ADR 0019). run.json is not rewritten for them while
// the session is open: readers see a lagging projection (ADR 0002), which
// session.ended, the next state change or Open after the session repairs.
func (r *Run) AppendSession(typ string, data any) (eventlog.Event, error) {
	if !replay.MayWrite(typ, replay.WriterSession) {
		return eventlog.Event{}, fmt.Errorf("event type %q is not a session event", typ)
	}
	b, err := canon.Marshal(data)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("append %s: %w", typ, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	probe := eventlog.Event{Type: typ, Data: json.RawMessage(b), Run: r.ID, Time: r.now().UTC().Format(time.RFC3339Nano)}
	if err := r.fold.TrySession(r.log.Len()+1, probe); err != nil {
		return eventlog.Event{}, err
	}
	e, err := r.log.Stage(typ, json.RawMessage(b))
	if err != nil {
		return eventlog.Event{}, err
	}
	if err := r.fold.Apply(r.log.Len(), e); err != nil {
		return eventlog.Event{}, fmt.Errorf("kernel wrote an event it cannot replay: %w", err)
	}
	if !r.fold.SessionOpen() {
		r.lagging = true // session.ended: the projection matters again
	}
	return e, nil
}

// Sessions are the run's agent sessions as replayed so far.
func (r *Run) Sessions() []replay.SessionView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fold.Sessions()
}

// Session reads the replay under the run's mutex: what internal/session
// decides from (open session, actions, ambiguous lists).
func (r *Run) Session(read func(f *replay.Folder)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	read(r.fold)
}

// Blobs is the run's blob store.
func (r *Run) Blobs() *blob.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobs
}

// LockOwner is the owner identity this run's writer lock was taken with.
func (r *Run) LockOwner() lock.Owner { return r.lk.Owner() }

// OpenWait is Open, waiting up to wait while a live owner holds the run's
// writer lock (another recorder appending, a human decision). A lock whose
// owner is dead is refused at once, as Open refuses it ('events unlock').
func OpenWait(stateDir, id string, wait time.Duration) (*Run, error) {
	return retryHeld(wait, func() (*Run, error) { return Open(stateDir, id) })
}

// retryHeld calls open until it does not fail on a lock a live owner
// holds, or wait has passed.
func retryHeld(wait time.Duration, open func() (*Run, error)) (*Run, error) {
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		r, err := open()
		var held *lock.HeldError
		if err == nil || !errors.As(err, &held) || held.Err != nil || !lock.Alive(held.Owner) || time.Now().After(deadline) {
			return r, err
		}
		time.Sleep(delay)
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}

// Implement moves a PLANNED run to IMPLEMENTING.
func (r *Run) Implement() error {
	if st := r.State(); st != replay.Planned {
		return &StateError{State: st, Action: "start implementing"}
	}
	return r.transition(replay.Implementing, replay.StateData{Reason: "agent session"})
}

// WorkspaceExclude is what a workspace copy of repo leaves out: the state
// directory's runs/ when it lies inside repo (see runtime.Spec.Exclude).
func WorkspaceExclude(repo, stateDir string) []string { return stateExclude(repo, stateDir) }
