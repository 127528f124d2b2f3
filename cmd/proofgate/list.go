package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/kernel/exit"
)

func listCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest last, each reconciled",
		Long: `List the runs in the state directory, oldest first, each with its state as
reconciled from its event log (without the freshness check 'status' does, so
a run whose code changed since is not shown STALE here). A run that does not
reconcile is listed as REFUSED with the reason, and the exit code is then 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, refused, err := app.List(g.state)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				if err := writeJSON(g.stdout, rows); err != nil {
					return err
				}
			case len(rows) == 0:
				printNoRuns(g.stdout, g.state)
			}
			for _, r := range rows {
				switch {
				case asJSON:
				case r.Error != "":
					fmt.Fprintf(g.stdout, "%s  REFUSED  %s\n", esc(r.RunID), esc(r.Error))
				case r.Archived:
					fmt.Fprintf(g.stdout, "%s  %s  (archived)\n", r.RunID, r.State)
				default:
					fmt.Fprintf(g.stdout, "%s  %s\n", r.RunID, r.State)
				}
			}
			if refused {
				return silent(exit.Refused)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
