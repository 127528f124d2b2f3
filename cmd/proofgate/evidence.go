package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/evidence"
	"github.com/proofgate/proofgate/kernel/exit"
)

// The evidence verbs (issue 16 item 1): thin; internal/evidence decides.

// addEvidenceCommands registers evidence and authorize.
func addEvidenceCommands(root *cobra.Command, g *globals) {
	c := &cobra.Command{
		Use:   "evidence",
		Short: "Collect runtime evidence for a claim from an allowlisted command, and judge it",
		Long: `Runtime evidence for one claim ("the health endpoint returns 503 when the
cache is down"): 'evidence collect' runs one exact, pre-reviewed command
from an allowlist you keep outside the repository, and 'evidence verdict'
records what a human (or an agent) concluded from it.

The allowlist (--allowlist FILE or $PROOFGATE_EVIDENCE_ALLOWLIST) is JSON:

  {"version": 1, "commands": {"health-503": {
     "argv": ["/usr/bin/curl", "-sS", "http://127.0.0.1:8080/health"],
     "cwd": "/srv/app", "env": {"LANG": "C"},
     "timeout_seconds": 30, "output_limit_bytes": 65536}}}

It must be owned by you (or root), writable by no one else, and outside the
repository. docs/SPEC.md "Runtime evidence" specifies every field.`,
	}
	c.AddCommand(evidenceCollectCmd(g), evidenceVerdictCmd(g))
	root.AddCommand(c, authorizeCmd(g))
}

// evidenceErr reports a refusal with its typed reason: as a JSON document
// {"error", "reason", "exit_code"} on stdout with --json, and on stderr.
func evidenceErr(g *globals, asJSON bool, err error) error {
	class, reason := exit.Refused, ""
	var (
		ae  *evidence.AllowlistError
		are *evidence.ArtifactError
		ve  *evidence.VerdictError
	)
	switch {
	case errors.As(err, &ae):
		reason = string(ae.Reason)
		switch ae.Reason {
		case evidence.ReasonExtraArgs, evidence.ReasonUnknownID, evidence.ReasonNoAllowlist:
			class = exit.Usage
		}
	case errors.As(err, &are):
		reason = string(are.Reason)
	case errors.As(err, &ve):
		reason = ve.Reason
		if ve.Reason != evidence.VerdictLimitation {
			class = exit.Usage
		}
	default:
		return classify(err)
	}
	fmt.Fprintln(g.stderr, "proofgate:", esc(err.Error()))
	if asJSON {
		writeJSON(g.stdout, struct {
			Error    string `json:"error"`
			Reason   string `json:"reason"`
			ExitCode int    `json:"exit_code"`
		}{err.Error(), reason, class.Code()})
	}
	return silent(class)
}

// allowlistPath is --allowlist, else $PROOFGATE_EVIDENCE_ALLOWLIST; and
// the repository of the working directory it must lie outside ("" when
// there is none).
func allowlistPath(flag string) (path, repo string) {
	path = flag
	if path == "" {
		path = os.Getenv(evidence.EnvAllowlist)
	}
	ctx, cancel := signalContext()
	defer cancel()
	repo, err := repoDir(ctx)
	if err != nil {
		repo = "" // not in a repository: there is none to keep it out of
	}
	return path, repo
}

func evidenceCollectCmd(g *globals) *cobra.Command {
	var claim, runID, dir, allowlist string
	var asJSON bool
	c := &cobra.Command{
		Use:   "collect ID --claim TEXT [--run RUN] [--dir DIR] [--allowlist FILE]",
		Short: "Run one allowlisted command for a claim and keep its output as evidence",
		Long: `Run the allowlist's command ID exactly as reviewed: its argv with no shell,
no interpolation and no appended arguments (any argument after ID is
refused), in its cwd with only its env, killed with its whole process group
when it exceeds its timeout or its per-stream output limit.

The output lands in a fresh collection directory DIR/<collection id>/ as
ID.stdout, ID.stderr and ID.json (the report: argv hash, exit code,
duration, truncation, artifact digests); nothing is ever overwritten. With
--run RUN the report is chained into the run's log as evidence.collected
and the streams are stored as the run's blobs (they travel in its bundle);
DIR then defaults to the run's evidence/ directory.

Exit 0 means the evidence was collected, whatever the command's exit code:
an exit code proves the process completed, not that the claim is true.

Example:
  proofgate evidence collect health-503 --claim "health returns 503 when the cache is down" \
      --allowlist ~/.config/proofgate/evidence.json --run latest`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(claim) == "" {
				return usageErr(errors.New("--claim is required: the evidence is for one claim"))
			}
			path, repo := allowlistPath(allowlist)
			ctx, cancel := signalContext()
			defer cancel()
			col, err := app.Collect(ctx, app.CollectOptions{State: g.state, Allowlist: path, Repo: repo, ID: args[0], Args: args[1:], Claim: claim, Run: runID, Dir: dir})
			if err != nil {
				return evidenceErr(g, asJSON, err)
			}
			return printCollection(g, asJSON, col)
		},
	}
	c.Flags().StringVar(&claim, "claim", "", "the claim the evidence is for (required)")
	c.Flags().StringVar(&runID, "run", "", "chain the report into this run's log (a run id or latest)")
	c.Flags().StringVar(&dir, "dir", "", "evidence directory (default: the run's evidence/; required without --run)")
	c.Flags().StringVar(&allowlist, "allowlist", "", "allowlist file (default $"+evidence.EnvAllowlist+")")
	c.Flags().BoolVar(&asJSON, "json", false, "print the collection as JSON")
	return c
}

func printCollection(g *globals, asJSON bool, col *app.Collected) error {
	if asJSON {
		return writeJSON(g.stdout, col)
	}
	rep := col.Report
	fmt.Fprintf(g.stdout, "collection %s: %s %s, exit %d, %d ms\n", rep.Collection, rep.ID, rep.Outcome, rep.ExitCode, rep.DurationMS)
	if rep.Limitation != "" {
		fmt.Fprintf(g.stdout, "  limitation: %s (%s): only unable-to-check can be recorded\n", rep.Limitation, esc(rep.Detail))
	}
	for _, s := range []evidence.Stream{rep.Stdout, rep.Stderr} {
		tr := ""
		if s.Truncated {
			tr = ", truncated"
		}
		fmt.Fprintf(g.stdout, "  %s  %d bytes  %s%s\n", s.File, s.Size, s.Digest, tr)
	}
	fmt.Fprintf(g.stdout, "  report %s  %s\n", filepath.Join(col.Dir, rep.ID+".json"), col.Digest)
	if col.Run != "" {
		fmt.Fprintf(g.stdout, "  chained into run %s as evidence.collected\n", col.Run)
	}
	return nil
}
