package app

import (
	"context"
	"fmt"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ImplementOptions say what to plan an implementation run of.
type ImplementOptions struct {
	// Contract is the resolved contract, read from File.
	Contract *contract.Resolved
	File     string
	// Plan returns the plan options of Contract (the caller's flags),
	// asked once the contract is known to declare tools.
	Plan func() (run.PlanOptions, error)
}

// NoToolsError is a contract without a tools: section, of which no
// implementation run is planned. Its class is usage.
type NoToolsError struct{ File string }

func (e *NoToolsError) Error() string {
	return fmt.Sprintf("%s declares no tools: an agent session needs a tools: section (see examples/agent)", e.File)
}

// Is reports whether target is exit.Usage.
func (e *NoToolsError) Is(target error) bool { return target == exit.Usage }

// PlanImplementing plans a run of o.Contract and moves it to IMPLEMENTING,
// where agent sessions record into it; it returns the run id. The errors
// of o.Plan and of planning are returned as they are.
func PlanImplementing(ctx context.Context, o ImplementOptions) (string, error) {
	if len(o.Contract.Tools) == 0 {
		return "", &NoToolsError{File: o.File}
	}
	opts, err := o.Plan()
	if err != nil {
		return "", err
	}
	opts.Implement = true
	r, err := run.Plan(ctx, opts)
	if err != nil {
		return "", err
	}
	id := r.ID
	r.Close()
	return id, nil
}

// AuditRun audits run id of the state directory and returns its report;
// a projection that only lags its log is reported from the log.
func AuditRun(state, id string) (*replay.Report, error) {
	rep, err := run.Audit(run.NewStore(state).Path(id))
	if err != nil && !IsLag(err) {
		return nil, err
	}
	return rep, nil
}
