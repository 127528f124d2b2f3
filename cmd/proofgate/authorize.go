package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

func authorizeCmd(g *globals) *cobra.Command {
	var target, actor, reason string
	var reject, asJSON bool
	c := &cobra.Command{
		Use:   "authorize RUN --target TARGET --actor NAME [--reject --reason TEXT]",
		Short: "Record that a run's result may (or may not) be published to a named target",
		Long: `Record a tracking authorization by --actor: a human decision, separate
from approval, that RUN's result may be published to --target (an issue
tracker item such as jira:OPS-12, a deployment such as deploy/prod). With
--reject (and --reason) the target is withheld: one rejection withholds a
target whatever else is recorded for it.

The decision is chained into the log as authorization.recorded, bound to the
verification digest, source and contract hash, under the rules of
'approve': refused (exit 1) unless the run is AWAITING_APPROVAL or COMPLETE
and reconciles (the chain verifies, run.json agrees with the log, the
verification digest recomputed from run.json matches), and refused when the
code or contract changed since planning (a run not yet COMPLETE moves to
STALE).

A contract with 'authorization: {required: true}' holds the run at
AWAITING_APPROVAL until its approvals are in and some target is authorized;
whichever comes last completes it. The authorizations travel in the bundle,
and 'bundle verify --require-authorization TARGET' refuses a bundle that
does not authorize TARGET.

Example:
  proofgate authorize latest --target deploy/prod --actor alice`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if target == "" {
				return usageErr(errors.New("--target is required"))
			}
			a, err := authorize(g, args[0], run.AuthorizeOptions{Target: target, Actor: actor, Reject: reject, Reason: reason})
			if err != nil {
				return err
			}
			rep, done := a.Report, a.Recorded
			if asJSON {
				return writeJSON(g.stdout, rep)
			}
			decision := "authorized"
			if reject {
				decision = "withheld"
			}
			fmt.Fprintf(g.stdout, "run %s: %s (%s %s by %s)\n", rep.RunID, rep.State, esc(target), decision, esc(actor))
			if done != nil {
				fmt.Fprintf(g.stdout, "  already recorded: %s\n", esc(done.Error()))
			}
			return nil
		},
	}
	c.Flags().StringVar(&target, "target", "", "where the result may be published (required)")
	c.Flags().StringVar(&actor, "actor", "", "who decides (required)")
	c.Flags().BoolVar(&reject, "reject", false, "withhold the target instead of authorizing it")
	c.Flags().StringVar(&reason, "reason", "", "why (required with --reject)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return c
}

// authorize checks the decision's flags (--actor, --reason with --reject,
// both printable) and records it on run id.
func authorize(g *globals, id string, o run.AuthorizeOptions) (*app.Authorized, error) {
	if err := checkDecision(o.Actor, o.Reason, o.Reject); err != nil {
		return nil, err
	}
	ctx, cancel := signalContext()
	defer cancel()
	f, err := freshness(ctx, g)
	if err != nil {
		return nil, err
	}
	o.Fresh = f
	a, err := app.Authorize(ctx, app.AuthorizeOptions{State: g.state, Run: id, Authorization: o})
	var de *app.DecisionError
	if errors.As(err, &de) {
		return nil, classify(approveHint(de.Err, de.Run))
	}
	if err != nil {
		return nil, classify(err)
	}
	return a, nil
}

// printAuthorized names, under an accepted verdict, the targets the run
// authorizes.
func printAuthorized(w io.Writer, v *bundle.Verdict) {
	if len(v.Authorized) == 0 {
		return
	}
	ts := make([]string, len(v.Authorized))
	for i, t := range v.Authorized {
		ts[i] = esc(t)
	}
	fmt.Fprintf(w, "authorized: %s\n", strings.Join(ts, ", "))
}

// printAuthorizationHint says, under a decision that left a run held for
// its contract's required authorization, how to record one.
func printAuthorizationHint(w io.Writer, r *run.Run, rep *replay.Report) {
	if rep.State != replay.AwaitingApproval || !r.Contract.AuthorizationRequired() {
		return
	}
	for _, a := range rep.Authorizations {
		if replay.Authorized(rep.Authorizations, a.Target) {
			return
		}
	}
	fmt.Fprintf(w, "  the contract requires a tracking authorization: 'proofgate authorize %s --target TARGET --actor NAME'\n", rep.RunID)
}

// printAuthorizations lists a report's tracking authorizations (status,
// audit).
func printAuthorizations(w io.Writer, rep *replay.Report) {
	for _, a := range rep.Authorizations {
		fmt.Fprintf(w, "authorization %s for %s by %s at %s %s\n", esc(a.Decision), esc(a.Target), esc(a.Actor), esc(a.Time), esc(a.Reason))
	}
}
