package main

import (
	"github.com/spf13/cobra"
)

func runCmd(g *globals) *cobra.Command {
	var pf planFlags
	var ef execFlags
	c := &cobra.Command{
		Use:   "run",
		Short: "Plan and execute a run, then wait for approval",
		Long: `Plan a run from the contract and execute every check (in dependency order,
--jobs at a time). When every check passed the run awaits approval (exit 3);
otherwise it is BLOCKED (exit 1). Progress goes to stderr, one line per check
as it starts and ends, and a heartbeat line (elapsed time, bytes of output)
every 30 s while it runs (PROOFGATE_HEARTBEAT=10s changes the interval).

  proofgate run                 # .proofgate/contract.yaml
  proofgate run --profile quick --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			r, p, err := pf.planConnected(ctx, g, ef, "")
			if err != nil {
				return err
			}
			defer p.Close()
			defer r.Close()
			return ef.executeWith(ctx, g, r, p)
		},
	}
	pf.register(c)
	ef.register(c)
	return c
}
