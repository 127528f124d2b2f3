package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/run"
)

func retryCmd(g *globals) *cobra.Command {
	var pf planFlags
	var ef execFlags
	var actor string
	c := &cobra.Command{
		Use:   "retry RUN",
		Short: "Start a new run that supersedes a BLOCKED, STALE or interrupted one",
		Long: `Plan and execute a new run from the current code and contract, and mark RUN
SUPERSEDED by it. RUN must be BLOCKED, STALE, or VERIFYING with its writer
gone (unlock it first with 'proofgate events unlock'). A retry that was
killed is finished by running it again: a new run it planned but never
executed is executed, one it named but never created is planned.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if actor != "" {
				if err := checkNames(actor, ""); err != nil {
					return err
				}
			}
			c, err := pf.load(g)
			if err != nil {
				return err
			}
			p, err := connect(ctx, c, ef.progress(g))
			if err != nil {
				return err
			}
			defer p.Close()
			opts, err := pf.options(ctx, g, c)
			if err != nil {
				return err
			}
			r, err := run.Retry(ctx, run.RetryOptions{ID: args[0], Actor: actor, Plan: opts})
			if err != nil {
				return classify(err)
			}
			defer r.Close()
			if !ef.quiet {
				fmt.Fprintf(g.stderr, "run %s supersedes %s\n", r.ID, r.Planned.Supersedes)
			}
			return ef.executeWith(ctx, g, r, p)
		},
	}
	pf.register(c)
	ef.register(c)
	c.Flags().StringVar(&actor, "actor", "", "who retries (recorded)")
	return c
}
