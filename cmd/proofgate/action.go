package main

import (
	"github.com/proofgate/proofgate/internal/ci/action"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/spf13/cobra"
)

// addActionCommands registers the GitHub Action entrypoints, hidden from
// the root's help: the runner calls them, a person does not (help action
// still shows them).
func addActionCommands(root *cobra.Command, g *globals) {
	c := &cobra.Command{
		Use:    "action",
		Hidden: true,
		Short:  "Entrypoint of the GitHub Action (action.yml)",
		Long: `Run ProofGate as the GitHub Action: read the inputs (INPUT_*) and the event
context the runner provides, plan a run from the pull request's base-branch
contract, execute the checks, count approvals from the pull request's
reviews, and export and upload the signed evidence bundle once the run is
COMPLETE. Outputs (run-id, state, verification-digest, bundle-path,
artifact-id) and the job summary go to the runner's files.

Exit codes: 0 complete (or pending with on-pending: neutral), 1 a check
failed, 2 bad input, 3 awaiting approval, 4 environment error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			res, err := action.Run(ctx, action.Options{Stdout: g.stdout})
			return actionExit(res.Code, err)
		},
	}
	c.AddCommand(&cobra.Command{
		Use:   "verify",
		Short: "Entrypoint of the verify action (verify/action.yml)",
		Long: `Find the evidence bundle for a release commit (input commit, default
GITHUB_SHA) among the workflow artifacts, or take input bundle, and verify
it offline against input trust-store like "proofgate bundle verify". With
match: tree (default) a bundle whose verified tree equals the commit's tree
is accepted (merge and squash commits). Outputs verdict, reason, run-id.

Exit codes: 0 accepted, 1 refused, 2 bad input, 4 environment error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			res, err := action.Verify(ctx, action.Options{Stdout: g.stdout})
			return actionExit(res.Code, err)
		},
	})
	root.AddCommand(c)
}

// actionExit is the CLI's error for what the action returned: err with
// its class, or the bare exit code of a result it already reported.
func actionExit(code int, err error) error {
	if err != nil {
		c, ok := exit.Of(err)
		if !ok {
			c = exit.Class(code)
		}
		return exit.Wrap(c, err)
	}
	if code != exitOK {
		return silent(exit.Class(code))
	}
	return nil
}
