package session

import (
	"context"
	"errors"
)

var errTODO = errors.New("session: not implemented yet")

// Start opens a new session on an IMPLEMENTING run.
func Start(ctx context.Context, o Options) (*Session, error) { return nil, errTODO }

// Resume takes over session id whose recorded owner is provably dead,
// closing its orphaned actions as crashed; it returns them (ambiguous).
func Resume(ctx context.Context, o Options, id string) (*Session, []string, error) {
	return nil, nil, errTODO
}

// BeginTurn records turn.started and returns the turn id.
func (s *Session) BeginTurn() (string, error) { return "", errTODO }

// EndTurn records turn.finished.
func (s *Session) EndTurn(turn string) error { return errTODO }

// Call passes one tool call through the gate, runs it when allowed, and
// records its receipts. A call with the same tool and input hash as an
// approved, not yet started action of this session starts that action.
func (s *Session) Call(ctx context.Context, c Call) (Result, error) { return Result{}, errTODO }

// End records session.ended.
func (s *Session) End(reason string) error { return errTODO }

// Approve records a human approval of a pending action, bound to its input hash.
func Approve(o Options, action, actor string) error { return errTODO }

// Reject records a human rejection of a pending action.
func Reject(o Options, action, actor, reason string) error { return errTODO }

// Retry decides an ambiguous action: the next call may run it again as a
// new action (retry_of), decided by policy again.
func Retry(o Options, action, actor string) error { return errTODO }

// Abandon decides an ambiguous action: it is never run again.
func Abandon(o Options, action, actor, reason string) error { return errTODO }

// Begin moves a PLANNED run to IMPLEMENTING.
func Begin(ctx context.Context, o Options) error { return errTODO }
