package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/printable"
)

// addHistoryCommands registers benchmark and context (issue 16).
func addHistoryCommands(root *cobra.Command, g *globals) {
	root.AddCommand(benchmarkCmd(g), contextCmd(g))
}

func cleanCmd(g *globals) *cobra.Command {
	var (
		apply, asJSON bool
		runID, actor  string
	)
	c := &cobra.Command{
		Use:   "clean [--apply] [--run RUN] [--json]",
		Short: "Remove what the contract's cleanup roots hold (dry run unless --apply)",
		Long: `Remove the contents of the contract's cleanup roots, and nothing else.

A contract declares the roots it may clean:

    cleanup: [build, out/tmp]

Each root is a directory relative to the repository: no "..", no absolute
path, never .git or the state directory. Without --apply, it only lists
what it would remove. With --apply it removes each root's entries (the root
directory itself stays). A root that is a symlink, or has one as a parent,
that resolves outside the repository or changes while it is opened, or that
is, holds or lies in the state directory is refused before anything is
removed (exit 1, with the reason). A symlink inside a root is removed as a
link; its target is never touched. An entry named .git is kept.

With --run RUN the roots come from that run's frozen contract, and --apply
records what was removed in the run's log as a cleanup.recorded event.
Without --run they come from --contract.

Examples:
    proofgate clean roots                      # what would go
    proofgate clean roots --apply --run latest --actor alice
    proofgate clean roots --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if actor != "" {
				if err := printable.Check("--actor", actor); err != nil {
					return usageErr(err)
				}
			}
			return runClean(cmd, g, apply, asJSON, runID, actor)
		},
	}
	c.Flags().BoolVar(&apply, "apply", false, "remove (default: list what would be removed)")
	c.Flags().StringVar(&runID, "run", "", "take the roots from this run's contract and record the removal in its log")
	c.Flags().StringVar(&actor, "actor", "", "who cleaned (recorded with --run)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func runClean(cmd *cobra.Command, g *globals, apply, asJSON bool, runID, actor string) error {
	ctx, cancel := signalContext()
	defer cancel()
	repo, err := repoDir(ctx)
	if err != nil {
		return err
	}
	out, err := app.CleanRoots(app.CleanOptions{Repo: repo, State: g.state, Run: runID, Actor: actor, Contract: g.contract, Apply: apply})
	if err != nil {
		return classify(err)
	}
	if asJSON {
		return writeJSON(g.stdout, out)
	}
	printClean(g, out)
	return nil
}

func printClean(g *globals, out *app.Cleaned) {
	verb := "would remove"
	if out.Applied {
		verb = "removed"
	}
	for _, rt := range out.Roots {
		if rt.Missing {
			fmt.Fprintf(g.stdout, "%s: absent\n", printable.Escape(rt.Root))
			continue
		}
		for _, e := range rt.Entries {
			fmt.Fprintf(g.stdout, "%s %s %s\n", verb, e.Kind, printable.Escape(e.Path))
		}
		for _, e := range rt.Skipped {
			fmt.Fprintf(g.stdout, "kept %s (never cleaned)\n", printable.Escape(e.Path))
		}
	}
	fmt.Fprintf(g.stdout, "%s %d entries", verb, out.Removed)
	if out.Recorded {
		fmt.Fprintf(g.stdout, ", recorded in run %s", out.RunID)
	}
	if !out.Applied {
		fmt.Fprint(g.stdout, " (dry run: --apply removes them)")
	}
	fmt.Fprintln(g.stdout)
}
