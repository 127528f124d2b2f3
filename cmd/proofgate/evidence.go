package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/evidence"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
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

// loadAllowlist reads the allowlist named by flag or the environment,
// refusing one inside the repository of the working directory (when there
// is one).
func loadAllowlist(flag string) (*evidence.Allowlist, error) {
	path := flag
	if path == "" {
		path = os.Getenv(evidence.EnvAllowlist)
	}
	ctx, cancel := signalContext()
	defer cancel()
	repo, err := repoDir(ctx)
	if err != nil {
		repo = "" // not in a repository: there is none to keep it out of
	}
	return evidence.Load(path, repo)
}

// openEvidenceRun opens --run for appending evidence, or returns nil.
func openEvidenceRun(g *globals, id string) (*run.Run, error) {
	if id == "" {
		return nil, nil
	}
	r, err := run.Open(g.state, id)
	if err != nil {
		return nil, classify(err)
	}
	return r, nil
}

// collectLockWait is how long evidence collect waits for another writer
// (an approval, a prune deciding about the run) to release the run's lock.
const collectLockWait = 10 * time.Second

// collectTarget resolves --run (without locking it) and the evidence
// directory.
func collectTarget(g *globals, runID, dir string) (id, root string, err error) {
	if runID == "" {
		root, err = evidenceRoot(dir, "")
		return "", root, err
	}
	store := run.NewStore(g.state)
	if id, err = store.Resolve(runID); err != nil {
		return "", "", classify(err)
	}
	root, err = evidenceRoot(dir, store.Path(id))
	return id, root, err
}

// evidenceRoot is --dir, or the run's evidence/ directory (inside the
// state directory's runs/, which the work-tree digest leaves out).
func evidenceRoot(dir, runDir string) (string, error) {
	switch {
	case dir != "":
		return filepath.Abs(dir)
	case runDir != "":
		return filepath.Abs(filepath.Join(runDir, "evidence"))
	}
	return "", usageErr(errors.New("--dir DIR is required without --run (keep it outside the repository, or the work tree is no longer clean)"))
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
			a, err := loadAllowlist(allowlist)
			if err != nil {
				return evidenceErr(g, asJSON, err)
			}
			e, err := a.Lookup(args[0], args[1:])
			if err != nil {
				return evidenceErr(g, asJSON, err)
			}
			// The run is resolved now and opened (locked) only after the
			// command: a collection may take minutes, and the run's writer
			// lock would hold off approvals meanwhile.
			id, root, err := collectTarget(g, runID, dir)
			if err != nil {
				return err
			}
			if id != "" {
				// A lease instead: `proofgate prune` leaves the run alone
				// until the collection is chained (or this process dies).
				l, err := run.Lease(g.state, id, "evidence collect", collectLockWait)
				if err != nil {
					return classify(err)
				}
				defer l.Release()
			}
			ctx, cancel := signalContext()
			defer cancel()
			col, err := evidence.Collect(ctx, evidence.CollectOptions{Entry: e, Allowlist: a, Claim: claim, Root: root, Runtime: process.New()})
			if err != nil {
				return evidenceErr(g, asJSON, err)
			}
			if err := chainCollection(g, id, col); err != nil {
				return err
			}
			return printCollection(g, asJSON, col, id)
		},
	}
	c.Flags().StringVar(&claim, "claim", "", "the claim the evidence is for (required)")
	c.Flags().StringVar(&runID, "run", "", "chain the report into this run's log (a run id or latest)")
	c.Flags().StringVar(&dir, "dir", "", "evidence directory (default: the run's evidence/; required without --run)")
	c.Flags().StringVar(&allowlist, "allowlist", "", "allowlist file (default $"+evidence.EnvAllowlist+")")
	c.Flags().BoolVar(&asJSON, "json", false, "print the collection as JSON")
	return c
}

// chainCollection chains col into run id's log (none when id is "").
func chainCollection(g *globals, id string, col *evidence.Collection) error {
	if id == "" {
		return nil
	}
	r, err := run.OpenWait(g.state, id, collectLockWait)
	if err != nil {
		return classify(fmt.Errorf("collection %s written, but not chained into run %s: %w", col.Dir, id, err))
	}
	defer r.Close()
	d := replay.EvidenceCollectedData{Digest: col.Digest, Report: col.Report}
	if _, err := r.AppendEvidence(replay.TypeEvidenceCollected, d, col.Stdout, col.Stderr); err != nil {
		return classify(fmt.Errorf("collection %s written, but not chained into run %s: %w", col.Dir, r.ID, err))
	}
	return nil
}

type collectionOut struct {
	Dir    string          `json:"dir"`
	Digest string          `json:"report_digest"`
	Run    string          `json:"run,omitempty"`
	Report evidence.Report `json:"report"`
}

func printCollection(g *globals, asJSON bool, col *evidence.Collection, runID string) error {
	out := collectionOut{Dir: col.Dir, Digest: col.Digest, Report: col.Report, Run: runID}
	if asJSON {
		return writeJSON(g.stdout, out)
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
	if runID != "" {
		fmt.Fprintf(g.stdout, "  chained into run %s as evidence.collected\n", runID)
	}
	return nil
}
