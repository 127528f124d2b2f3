package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/run"
)

func freshness(ctx context.Context, g *globals) (run.Freshness, error) {
	repo, err := repoDir(ctx)
	if err != nil {
		return run.Freshness{}, err
	}
	return run.Freshness{RepoDir: repo, StateDir: g.state}, nil
}

func statusCmd(g *globals) *cobra.Command {
	var asJSON, audit bool
	c := &cobra.Command{
		Use:   "status RUN [--audit] [--json]",
		Short: "Reconcile a run and report its state (--audit: every check, decision and defect)",
		Long: `Reconcile a run and report its state.

The run's projection (run.json) is checked against its event log, the
verification digest is recomputed and every evidence blob is re-hashed before
anything is reported. A run that does not reconcile is refused (exit 1) with
the reason. A run whose code or contract changed since planning is moved to
STALE. RUN is a run id or "latest".

With --audit the report also names the chain (length and head), the
contract hash, the source commit and tree, every evidence blob re-hashed,
and each agent call's decisions in full. --json prints the same object
either way. 'proofgate audit RUN' is the earlier spelling of
'proofgate status RUN --audit'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(g, args[0], audit, asJSON)
		},
	}
	c.Flags().BoolVar(&audit, "audit", false, "also print the chain, the source, every evidence blob and each call's decisions")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// auditAlias keeps 'proofgate audit RUN' working, hidden, as 'status
// RUN --audit' (ADR 0045).
func auditAlias(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:    "audit RUN",
		Short:  "Same as 'status RUN --audit'",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return status(g, args[0], true, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func status(g *globals, id string, audit, asJSON bool) error {
	ctx, cancel := signalContext()
	defer cancel()
	f, err := freshness(ctx, g)
	if err != nil {
		return err
	}
	st, err := run.Inspect(ctx, g.state, id, f)
	if err != nil {
		return classify(err)
	}
	if asJSON {
		if err := writeJSON(g.stdout, app.NewStatusDoc(st)); err != nil {
			return err
		}
	} else {
		printReport(g.stdout, st.Report, st.Stale)
		printFailures(g, st.Report)
		printStatusNotes(g.stdout, st, audit)
	}
	return stateExit(st.State)
}

func printStatusNotes(w io.Writer, st *run.Status, audit bool) {
	for _, c := range st.Interrupted {
		fmt.Fprintf(w, "interrupted: check %s started and never finished (the writer is gone); recover with 'proofgate events unlock %s --actor NAME --older-than 0s' (if its lock is still there) then 'proofgate retry %s' or 'proofgate cancel %s --actor NAME --reason TEXT'\n", c, st.RunID, st.RunID, st.RunID)
	}
	if st.TornTail {
		fmt.Fprintln(w, "torn tail: the log ends in a partial line (a writer was killed mid-append); the next writer records its recovery")
	}
	if d := st.DecisionPending; d != nil {
		fmt.Fprintf(w, "decision pending: the decision of %s moves the run to %s, and its writer died before recording that; the next writer records it (if the writer's lock remains: 'proofgate events unlock %s --actor NAME --older-than 0s')\n", d.Actor, d.To, st.RunID)
	}
	for _, r := range st.StaleReasons {
		if st.Stale == nil { // a live writer holds the run: not recorded yet
			fmt.Fprintf(w, "stale: %s\n", esc(r))
		}
	}
	printSessions(w, st.Report, audit)
	if a := st.Archived; a != nil {
		fmt.Fprintf(w, "archived: read from %s (%s, as the prune log recorded it); the run is read-only\n", a.Archive, a.Digest)
	}
	if st.Writer != nil {
		state := "dead"
		if st.Writer.Alive {
			state = "alive"
		}
		fmt.Fprintf(w, "writer: pid %d on %s since %s (%s)\n", st.Writer.PID, esc(st.Writer.Host), st.Writer.Created.Format(time.RFC3339), state)
	}
	if audit {
		fmt.Fprintf(w, "chain: %d events, head %s\ncontract_hash %s\nsource commit %s tree %s\n", st.ChainLength, st.ChainHead, st.ContractHash, st.Source.Commit, st.Source.Tree)
		for _, b := range st.Blobs {
			fmt.Fprintf(w, "evidence %s ok\n", b)
		}
	}
}
