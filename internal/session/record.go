package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/policy"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/replay"
)

// newID returns prefix + 12 lowercase hex digits from crypto/rand.
func newID(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return prefix + hex.EncodeToString(b[:])
}

// withRun opens the run (waiting for a live writer's lock up to
// o.LockWait), calls fn, and closes the run: the lock is held only for fn.
func withRun(o Options, fn func(r *run.Run) error) error {
	wait := o.LockWait
	if wait <= 0 {
		wait = DefaultLockWait
	}
	r, err := run.OpenWait(o.StateDir, o.Run, wait)
	if err != nil {
		return err
	}
	ferr := fn(r)
	if cerr := r.Close(); ferr == nil && cerr != nil {
		return cerr
	}
	return ferr
}

func implementing(r *run.Run) error {
	if st := r.State(); st != replay.Implementing {
		return &NotImplementingError{Run: r.ID, State: string(st)}
	}
	return nil
}

func ownerOf(o lock.Owner) replay.Owner {
	return replay.Owner{PID: o.PID, Start: o.Start, BootID: o.BootID, Host: o.Host, Created: o.Created}
}

func lockOwner(o replay.Owner) lock.Owner {
	return lock.Owner{PID: o.PID, Start: o.Start, BootID: o.BootID, Host: o.Host, Created: o.Created}
}

// ResumeRequiredError refuses to start a session while the run has an open
// session whose owner is provably dead: resume it (and end it) instead.
type ResumeRequiredError struct{ Run, Session string }

func (e *ResumeRequiredError) Error() string {
	return fmt.Sprintf("run %s has open session %s whose recorder is dead: resume it (proofgate session resume %s --session %s)", e.Run, e.Session, e.Run, e.Session)
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *ResumeRequiredError) Is(target error) bool { return target == exit.Refused }

// deadOwner says whether o is provably dead: same host and boot as this
// process, and its pid gone or reused. Otherwise it returns why not.
func deadOwner(o replay.Owner) (bool, string) {
	self, err := lock.Self(o.Created)
	switch {
	case err != nil:
		return false, "unknown"
	case o.Host != self.Host:
		return false, "foreign host"
	case o.BootID != self.BootID:
		return false, "unknown"
	case o.PID == self.PID && o.Start == self.Start:
		return false, "alive"
	case lock.Alive(lockOwner(o)):
		return false, "alive"
	}
	return true, ""
}

// Start opens a new session on an IMPLEMENTING run.
func Start(ctx context.Context, o Options) (*Session, error) {
	if err := checkAgent(o.Agent); err != nil {
		return nil, err
	}
	s, err := start(o)
	if broke, _, uerr := unlockDead(o, err, "session start"); uerr != nil {
		return nil, uerr
	} else if broke {
		s, err = start(o)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func start(o Options) (*Session, error) {
	var s *Session
	err := withRun(o, func(r *run.Run) error {
		if err := implementing(r); err != nil {
			return err
		}
		var open replay.SessionHead
		var isOpen bool
		r.Session(func(f *replay.Folder) { open, isOpen = f.OpenHead() })
		if isOpen {
			if dead, why := deadOwner(open.Owner); !dead {
				return &LiveSessionError{Session: open.ID, Owner: lockOwner(open.Owner), Why: why}
			}
			return &ResumeRequiredError{Run: r.ID, Session: open.ID}
		}
		s = newSession(o, r, newID("s-"), o.Agent, ownerOf(r.LockOwner()))
		_, err := r.AppendSession(replay.TypeSessionStarted, replay.SessionStartedData{Session: s.id, Agent: s.agent, Owner: s.owner})
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// unlockDead breaks the run's writer lock when err says a provably dead
// owner holds it (a recorder killed mid-append), as 'events unlock' does:
// lock.broken is recorded and the tool processes it recorded are killed.
// It reports whether it did, and the processes it killed; a live or
// foreign owner is never touched (lock.Break refuses).
func unlockDead(o Options, err error, actor string) (bool, []lock.Killed, error) {
	var held *lock.HeldError
	if !errors.As(err, &held) || held.Err != nil || lock.Alive(held.Owner) {
		return false, nil, nil
	}
	u, uerr := run.Unlock(o.StateDir, o.Run, actor, 0, time.Now())
	if uerr != nil {
		return false, nil, errors.Join(err, uerr)
	}
	return true, u.Processes, nil
}

func checkAgent(agent string) error {
	if err := actor.Check("agent", agent); err != nil {
		return err
	}
	if len(agent) > replay.MaxAgent {
		return &printable.Error{Field: "agent", Detail: fmt.Sprintf("longer than %d bytes", replay.MaxAgent)}
	}
	return nil
}

func newSession(o Options, r *run.Run, id, agent string, owner replay.Owner) *Session {
	o.Run = r.ID
	return &Session{o: o, run: r.ID, id: id, agent: agent, c: r.Contract, gate: policy.New(r.Contract), owner: owner,
		procs: filepath.Join(r.Dir, run.ProcDir)}
}

// UnknownSessionError names a session the run does not have open.
type UnknownSessionError struct{ Run, Session string }

func (e *UnknownSessionError) Error() string {
	return fmt.Sprintf("run %s has no open session %q", e.Run, e.Session)
}

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *UnknownSessionError) Is(target error) bool { return target == exit.Usage }

// Resume takes over session id, whose recorded owner must be provably dead
// (same host and boot, pid gone or reused): it stops what the dead
// recorder's unfinished calls left running (their process groups and
// cgroups, their containers; Session.Stopped says what it found), records
// session.resumed, closes every orphaned started action as crashed
// (closed_by recovery) and returns the session's ambiguous actions, which
// a human must decide (Retry, Abandon) before the session takes a new call.
func Resume(ctx context.Context, o Options, id string) (*Session, []string, error) {
	s, amb, err := resume(ctx, o, id)
	broke, killed, uerr := unlockDead(o, err, "session resume")
	if uerr != nil {
		return nil, nil, uerr
	}
	if broke {
		if s, amb, err = resume(ctx, o, id); err == nil {
			s.stopped = unlocked(s.stopped, killed)
		}
	}
	return s, amb, err
}

func resume(ctx context.Context, o Options, id string) (*Session, []string, error) {
	var s *Session
	var amb []string
	err := withRun(o, func(r *run.Run) error {
		if err := implementing(r); err != nil {
			return err
		}
		var v replay.SessionView
		var ok bool
		r.Session(func(f *replay.Folder) {
			v, ok = f.OpenSession()
			amb = f.Ambiguous(id)
		})
		if !ok || v.ID != id {
			return &UnknownSessionError{Run: r.ID, Session: id}
		}
		if dead, why := deadOwner(v.Owner); !dead {
			return &LiveSessionError{Session: id, Owner: lockOwner(v.Owner), Why: why}
		}
		if amb == nil {
			amb = []string{}
		}
		stopped := reap(ctx, o, r, v) // before the actions are reported
		s = newSession(o, r, id, v.Agent, ownerOf(r.LockOwner()))
		s.stopped = stopped
		if _, err := r.AppendSession(replay.TypeSessionResumed, replay.SessionResumedData{Session: id, Owner: s.owner, PreviousOwner: v.Owner, Ambiguous: amb}); err != nil {
			return err
		}
		return closeOrphans(r, v)
	})
	if err != nil {
		return nil, nil, err
	}
	return s, amb, nil
}

// closeOrphans records tool.finished crashed (closed_by recovery) for each
// action of v that started and never finished.
func closeOrphans(r *run.Run, v replay.SessionView) error {
	for _, a := range v.Calls {
		if a.Status != replay.CallStarted {
			continue
		}
		oh, err := replay.OutputHash(-1, "", nil, nil)
		if err != nil {
			return err
		}
		d := replay.ToolFinishedData{Call: a.ID, Receipt: a.Receipt, Result: replay.ResultCrashed, ExitCode: -1, OutputHash: oh, ClosedBy: replay.ClosedByRecovery}
		if _, err := r.AppendSession(replay.TypeToolFinished, d); err != nil {
			return err
		}
	}
	return nil
}

// BeginTurn records turn.started and returns the turn id (t-<n>).
func (s *Session) BeginTurn() (string, error) {
	var turn string
	err := s.hold(func(r *run.Run) error {
		r.Session(func(f *replay.Folder) {
			if h, ok := f.Head(s.id); ok {
				turn = fmt.Sprintf("t-%d", h.Turns+1)
			}
		})
		_, err := r.AppendSession(replay.TypeTurnStarted, replay.TurnData{Session: s.id, Turn: turn})
		return err
	})
	return turn, err
}

// EndTurn records turn.finished.
func (s *Session) EndTurn(turn string) error {
	return s.hold(func(r *run.Run) error {
		_, err := r.AppendSession(replay.TypeTurnFinished, replay.TurnData{Session: s.id, Turn: turn})
		return err
	})
}

// End records session.ended; refused (*AmbiguousError) while an action is
// started and unfinished or ambiguous and undecided.
func (s *Session) End(reason string) error {
	if err := printable.CheckText("reason", reason); err != nil {
		return err
	}
	err := s.holdAnd(true, func(r *run.Run) error {
		var amb []string
		r.Session(func(f *replay.Folder) { amb = f.Ambiguous(s.id) })
		if len(amb) > 0 {
			return &AmbiguousError{Calls: amb}
		}
		_, err := r.AppendSession(replay.TypeSessionEnded, replay.SessionEndedData{Session: s.id, Reason: reason})
		return err
	})
	if err == nil {
		s.drop()
	}
	return err
}

// Begin moves the PLANNED run o.Run to IMPLEMENTING.
func Begin(ctx context.Context, o Options) error {
	return withRun(o, func(r *run.Run) error { return r.Implement() })
}

// hold is withRun for the session's own holds: it re-takes the run the
// previous hold released (run.Reopen), so a call re-reads only the events
// appended since, not the whole log. After any error the next hold opens
// the run afresh (run.Open verifies everything).
func (s *Session) hold(fn func(r *run.Run) error) error { return s.holdAnd(false, fn) }

// holdAnd is hold; with last, a hold whose fn succeeds closes the run
// instead of releasing it (run.Close: the log's head index is written, the
// lock's kept owner file removed), for the session's last hold.
func (s *Session) holdAnd(last bool, fn func(r *run.Run) error) error {
	wait := s.o.LockWait
	if wait <= 0 {
		wait = DefaultLockWait
	}
	s.mu.Lock()
	prev := s.held
	s.held = nil
	s.mu.Unlock()
	r, err := run.Reopen(prev, s.o.StateDir, s.run, wait)
	if err != nil {
		if prev != nil {
			prev.Discard()
		}
		return err
	}
	ferr := fn(r)
	if last && ferr == nil {
		return r.Close()
	}
	rerr := r.Release()
	if ferr != nil || rerr != nil {
		r.Discard() // the next hold opens afresh
		if ferr != nil {
			return ferr
		}
		return rerr
	}
	s.mu.Lock()
	s.held = r
	s.mu.Unlock()
	return nil
}

// Close releases what this process holds for the session without ending
// it: the lock's kept owner file, the process-record slots its tools used,
// the blob files made ahead. The session stays open in the run, for
// another process to resume (this one's pid provably dead once it exits),
// or for this one to go on with (the next call opens afresh). A process
// that made calls and does not end the session calls it before exiting
// ('proofgate tool exec --session', an MCP server serving a resumed
// session); after End it does nothing.
func (s *Session) Close() { s.drop() }

// drop forgets the run the last hold released, with the lock's kept owner
// file and the process-record slots the session's tools used: after
// session.ended no hold follows and no tool runs.
func (s *Session) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock.DropSlots(s.procs)
	if s.spares != nil {
		s.spares.Close()
		s.spares = nil
	}
	if s.held != nil {
		s.held.Discard()
		s.held = nil
	}
}
