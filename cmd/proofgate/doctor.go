package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/kernel/exit"
)

func doctorCmd(g *globals) *cobra.Command {
	var o app.DoctorOptions
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor [--profile P] [--trust FILE] [--json]",
		Short: "Check what a run needs and say what to fix",
		Long: `Check, in order: git and that the current directory is in a repository
with a commit; the contract (as 'contract check' does, with --profile); the
Docker daemon and its API version, and that each docker check's image is
pinned by digest (a repository digest, or the image ID of a local build:
NAME[:TAG]@sha256:<ID>) and present locally, or, under pull: missing or
always, known to its registry (asked through the daemon, which honours its
registry mirrors; the layers are not pulled); that each process check's
executable is found on the PATH the check gets (its env PATH, else your
PATH when env_from_host names it, else the default PATH), printing the file
it resolves to; the trust store (--trust, default .proofgate/trust.json;
absent is a warning: only the release gate needs it), and that its keys'
identities accept this repository's bundles (not the placeholder
repo:OWNER/NAME, and for the origin remote's repository); that no workflow
in .github/workflows still has the placeholder pin OWNER/proofgate@1111...
(proofgate init --action pins it); that the state directory's runs/ is
ignored by git. Each problem comes with the command or edit that fixes it.

Exit 0 when nothing failed (warnings allowed); 2 when an input is invalid
or missing (no repository, no commit, an invalid contract or trust store,
an unpinned image, a placeholder pin or identity); otherwise 4
(environment: no git, no Docker daemon, a missing image or executable).
An unpinned image (a tag alone) is an invalid input (2): the fix line gives
the pinned reference.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 60*time.Second)
			defer cancel()
			o.Contract, o.State = g.contract, g.state
			return reportDoctor(g, app.Doctor(ctx, o), asJSON)
		},
	}
	c.Flags().StringVar(&o.Profile, "profile", "", "resolve this contract profile")
	c.Flags().StringVar(&o.Trust, "trust", ".proofgate/trust.json", "trust store to check")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// reportDoctor prints the findings and returns their exit class.
func reportDoctor(g *globals, found []app.Finding, asJSON bool) error {
	class, failed := app.DoctorClass(found)
	if asJSON {
		if err := writeJSONText(g.stdout, map[string]any{"ok": len(failed) == 0, "exit_code": class.Code(), "checks": found}); err != nil {
			return envErr(err)
		}
		if class == exit.OK {
			return nil
		}
		return silent(class)
	}
	for _, f := range found {
		fmt.Fprintf(g.stdout, "%-5s %-12s %s\n", f.Status, esc(f.Name), esc(f.Detail))
		if f.Fix != "" {
			fmt.Fprintf(g.stdout, "      fix: %s\n", esc(f.Fix))
		}
	}
	if class == exit.OK {
		fmt.Fprintln(g.stdout, "ready: nothing failed")
		return nil
	}
	return exit.Wrap(class, fmt.Errorf("doctor: %d problem(s) to fix: %s", len(failed), strings.Join(slices.Compact(failed), ", ")))
}
