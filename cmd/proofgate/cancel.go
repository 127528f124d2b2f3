package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/run"
)

func cancelCmd(g *globals) *cobra.Command {
	var actor, reason string
	c := &cobra.Command{
		Use:   "cancel RUN --actor NAME --reason TEXT",
		Short: "Cancel a run that has not ended",
		Long: `Move RUN to CANCELLED, recording --actor and --reason. Refused (exit 1) for
a run that already ended (COMPLETE, REJECTED, CANCELLED, SUPERSEDED) and
while another process holds the run's writer lock.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if actor == "" {
				return usageErr(errors.New("--actor is required"))
			}
			if reason == "" {
				return usageErr(errors.New("--reason is required"))
			}
			if err := checkNames(actor, reason); err != nil {
				return err
			}
			r, err := run.Open(g.state, args[0])
			if err != nil {
				return classify(err)
			}
			defer r.Close()
			if err := r.Cancel(actor, reason); err != nil {
				return classify(err)
			}
			fmt.Fprintf(g.stdout, "run %s: %s\n", r.ID, r.State())
			return nil
		},
	}
	c.Flags().StringVar(&actor, "actor", "", "who cancels (required)")
	c.Flags().StringVar(&reason, "reason", "", "why (required)")
	return c
}
