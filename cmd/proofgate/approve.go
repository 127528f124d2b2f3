package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/run"
)

// decision is a run opened for a human decision (approve, authorize),
// with the work tree's freshness it checks and the command's context.
type decision struct {
	ctx    context.Context
	cancel context.CancelFunc
	fresh  run.Freshness
	r      *run.Run
}

func (d *decision) close() {
	d.r.Close()
	d.cancel()
}

// openDecision checks a decision's flags (--actor, --reason with
// --reject, both printable) and opens run id for it.
// checkDecision checks a human decision's flags: --actor given, --reason
// with a rejection, both printable.
func checkDecision(actor, reason string, reject bool) error {
	switch {
	case actor == "":
		return usageErr(errors.New("--actor is required"))
	case reject && reason == "":
		return usageErr(errors.New("a rejection needs --reason"))
	}
	return checkNames(actor, reason)
}

func openDecision(g *globals, id, actor, reason string, reject bool) (*decision, error) {
	if err := checkDecision(actor, reason, reject); err != nil {
		return nil, err
	}
	ctx, cancel := signalContext()
	f, err := freshness(ctx, g)
	if err != nil {
		cancel()
		return nil, err
	}
	r, err := run.Open(g.state, id)
	if err != nil {
		cancel()
		return nil, classify(err)
	}
	return &decision{ctx: ctx, cancel: cancel, fresh: f, r: r}, nil
}

func approveCmd(g *globals) *cobra.Command { return decideCmd(g, false) }

// rejectCmd is 'reject RUN', as 'tool reject' is for a call (ADR 0048);
// 'approve --reject' stays, hidden.
func rejectCmd(g *globals) *cobra.Command { return decideCmd(g, true) }

func decideCmd(g *globals, rejecting bool) *cobra.Command {
	var actor, reason string
	var reject, asJSON bool
	c := &cobra.Command{
		Use:   "approve RUN --actor NAME [--reason TEXT]",
		Short: "Record a human approval of a run awaiting approval",
		Long: `Record an approval by --actor ('proofgate reject' records a rejection).
Refused (exit 1) unless the run is AWAITING_APPROVAL and reconciles: the
chain verifies, the verification digest recomputed from run.json matches
the log, and neither the code nor the contract changed since planning (then
the run moves to STALE). When the approvals reach approval.required the run
is COMPLETE (with authorization: {required: true}, once a target is also
authorized: see 'proofgate authorize'). Repeating a decision that is
already the run's outcome (the same actor approving a COMPLETE run, for
example after a crash) records nothing and exits 0.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return decide(g, args[0], actor, reason, reject || rejecting, asJSON)
		},
	}
	if rejecting {
		c.Use = "reject RUN --actor NAME --reason TEXT"
		c.Short = "Record a human rejection of a run awaiting approval"
		c.Long = `Record a rejection by --actor, with --reason: the run moves to REJECTED.
Refused (exit 1) unless the run is AWAITING_APPROVAL and reconciles, as
for 'proofgate approve'. Rejecting a run that is already REJECTED by the
same actor (for example after a crash) records nothing and exits 0.`
	}
	c.Flags().StringVar(&actor, "actor", "", "who decides (required)")
	reasonUsage := "why"
	if rejecting {
		reasonUsage = "why (required)"
	} else {
		c.Flags().BoolVar(&reject, "reject", false, "reject instead of approve (the earlier spelling of 'proofgate reject')")
		_ = c.Flags().MarkHidden("reject")
	}
	c.Flags().StringVar(&reason, "reason", "", reasonUsage)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// decide records actor's decision on run id.
func decide(g *globals, id, actor, reason string, reject, asJSON bool) error {
	d, err := openDecision(g, id, actor, reason, reject)
	if err != nil {
		return err
	}
	defer d.close()
	r := d.r
	err = r.Decide(d.ctx, run.DecisionOptions{Actor: actor, Reject: reject, Reason: reason, Fresh: d.fresh})
	var done *run.DecidedError
	if err != nil && !errors.As(err, &done) {
		return classify(approveHint(err, r.ID))
	}
	rep := r.Report()
	if asJSON {
		return writeJSON(g.stdout, rep)
	}
	if done != nil {
		fmt.Fprintf(g.stdout, "run %s: %s (%s)\n", rep.RunID, rep.State, done)
		return nil
	}
	fmt.Fprintf(g.stdout, "run %s: %s\n", rep.RunID, rep.State)
	printAuthorizationHint(g.stdout, r, rep)
	return nil
}
