package app

import (
	"context"
	"errors"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// AuthorizeOptions say whose result may (or may not) be published where.
type AuthorizeOptions struct {
	// State is the state directory; Run a run id or "latest".
	State, Run string
	// Authorization is the decision (target, actor, reject with its
	// reason) and the work tree whose freshness it checks.
	Authorization run.AuthorizeOptions
}

// Authorized is a run after a tracking authorization.
type Authorized struct {
	Report *replay.Report
	// Recorded, when set, is the same decision recorded earlier: nothing
	// was appended.
	Recorded *run.DecidedError
}

// DecisionError is a human decision the run refused (its state, a changed
// source or contract), with the run's id for the caller's next step.
type DecisionError struct {
	Run string
	Err error
}

func (e *DecisionError) Error() string { return e.Err.Error() }
func (e *DecisionError) Unwrap() error { return e.Err }

// Authorize records a tracking authorization on run o.Run
// (authorization.recorded, run.Run.Authorize) and returns the run's
// report. Opening the run fails with its own error; a refused
// authorization is a *DecisionError.
func Authorize(ctx context.Context, o AuthorizeOptions) (*Authorized, error) {
	r, err := run.Open(o.State, o.Run)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	err = r.Authorize(ctx, o.Authorization)
	var done *run.DecidedError
	if err != nil && !errors.As(err, &done) {
		return nil, &DecisionError{Run: r.ID, Err: err}
	}
	return &Authorized{Report: r.Report(), Recorded: done}, nil
}
