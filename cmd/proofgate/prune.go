package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Test hooks, set only by the package's tests (prune_test.go): the clock,
// and a settle time below retention.MinSettle. The shipped binary has no
// way to change either.
var (
	pruneNow          = time.Now
	pruneTestSettle   time.Duration
	pruneTestProgress func(string)
)

type pruneFlags struct {
	apply, asJSON                    bool
	archiveAfter, blobMinAge, settle string
	keyRef, actor                    string
}

func pruneCmd(g *globals) *cobra.Command {
	var f pruneFlags
	c := &cobra.Command{
		Use:   "prune [--apply] [--archive-after AGE] [--blob-min-age AGE] [--settle DUR] [--key K] [--json]",
		Short: "Archive old terminal runs and reclaim unreachable blobs (dry run unless --apply)",
		Long: `Without --apply, print what it would do and change nothing: every
setting with where it came from (flag, environment, contract, default), each
run with its decision and why, and the blobs it would reclaim.

Terminal runs (COMPLETE, REJECTED, CANCELLED, SUPERSEDED) whose last event
is older than archive_after (at least 1 day) are archived into
<state>/archive/<RUN>.tar.gz, read back and proven byte-identical, recorded
in the hash-chained <state>/prune-log.ndjson, and replaced by a placeholder;
status, list, events verify, output and bundle export read them from
the archive. Runs that are not terminal, that a live writer locks or holds a
lease on (evidence collect --run), or that a retained run names (a retry's
predecessor, an implementation run) stay; each says why, with the writer's
pid ("writer" in --json). A writer that died holds nothing.

Blobs that no event of any retained run or archive names and that are older
than blob_min_age are renamed to <name>.pruning, rechecked after the settle
time (at least 5s) and deleted, or restored if something named them meanwhile.

The base is the contract's retention: section (else 30d and 1h). A flag
(--archive-after, --blob-min-age, --settle) or variable
(PROOFGATE_PRUNE_ARCHIVE_AFTER, PROOFGATE_PRUNE_BLOB_MIN_AGE,
PROOFGATE_PRUNE_SETTLE) may only lengthen a setting: a shorter one is
refused (exit 2). With --key (PKCS#8 PEM or env:VAR), --apply first verifies
every run's chain and records a signed checkpoint of what it archives.

A killed apply is safe: the next store open (or clean runs) restores what it left,
and running it again completes it. Exit 1 when an apply is refused or the
state directory has an integrity error (a recorded archive is missing).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPrune(cmd, g, f) },
	}
	fl := c.Flags()
	fl.BoolVar(&f.apply, "apply", false, "archive and reclaim (default: dry run)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	fl.StringVar(&f.archiveAfter, "archive-after", "", "archive terminal runs older than AGE (e.g. 90d; only longer than the base)")
	fl.StringVar(&f.blobMinAge, "blob-min-age", "", "keep unreachable blobs younger than AGE (only longer than the base)")
	fl.StringVar(&f.settle, "settle", "", "wait DUR between renaming and deleting blobs (at least 5s)")
	fl.StringVar(&f.keyRef, "key", "", "sign a checkpoint of what --apply archives: PKCS#8 PEM file or env:VAR")
	fl.StringVar(&f.actor, "actor", "", "who applies (recorded in the prune log; default: the OS user)")
	return c
}

func runPrune(cmd *cobra.Command, g *globals, f pruneFlags) error {
	s, err := app.RetentionSettings(g.contract, app.RetentionFlags{ArchiveAfter: f.archiveAfter, BlobMinAge: f.blobMinAge, Settle: f.settle}, os.Getenv)
	if err != nil {
		return err
	}
	if !f.apply {
		if f.keyRef != "" {
			return usageErr(errors.New("--key signs what --apply archives; it needs --apply"))
		}
		plan, err := app.PruneScan(g.state, s, pruneNow())
		if err != nil {
			return err
		}
		if f.asJSON {
			if err := writeJSON(g.stdout, plan); err != nil {
				return err
			}
		} else {
			printPlan(g.stdout, plan, false)
		}
		if len(plan.Problems) > 0 {
			return silent(exit.Refused)
		}
		return nil
	}
	o := app.PruneOptions{Settings: s, Now: pruneNow, Progress: pruneTestProgress, TestSettle: pruneTestSettle}
	if o.Actor, err = app.PruneActor(f.actor); err != nil {
		return err
	}
	if f.keyRef != "" {
		if o.Signer, err = loadSigner(f.keyRef); err != nil {
			return err
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := app.PruneApply(ctx, g.state, o)
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(g.stdout, res)
	}
	printPlan(g.stdout, res.Plan, true)
	fmt.Fprintf(g.stdout, "applied: %d runs archived, %d kept; %d blobs reclaimed (%d bytes), %d restored; recorded in %s\n",
		res.Counts.RunsArchived, res.Counts.RunsKept, res.Counts.BlobsReclaimed, res.Counts.BytesReclaimed, res.Counts.BlobsRestored,
		filepath.Join(g.state, retention.LogFile))
	for _, sk := range res.Skipped {
		fmt.Fprintf(g.stdout, "  not archived after all: %s: %s\n", sk.Run, esc(sk.Reason))
	}
	return nil
}

func printPlan(w io.Writer, p *retention.Plan, applied bool) {
	if applied {
		fmt.Fprintln(w, "prune: applied")
	} else {
		fmt.Fprintln(w, "prune: dry run (nothing changed; --apply does it)")
	}
	fmt.Fprintln(w, "settings:")
	for _, s := range p.Settings.List() {
		fmt.Fprintf(w, "  %-14s %-8s from %s (%s)\n", s.Name, s.Text, s.Source, s.Origin)
	}
	fmt.Fprintf(w, "runs: %d (archive %d, keep %d)\n", len(p.Runs), len(p.Archive), len(p.Runs)-len(p.Archive))
	for _, r := range p.Runs {
		state := r.State
		if state == "" {
			state = "-"
		}
		fmt.Fprintf(w, "  %s  %-17s %-7s %s\n", r.Run, state, r.Decision, esc(r.Reason))
	}
	b := p.Blobs
	fmt.Fprintf(w, "blobs in retained runs: %d: %d reachable, %d young (kept), %d in locked runs (kept), %d reclaimable (%d bytes)\n",
		b.Total, b.Reachable, b.Young, b.InLocked, b.Reclaimable, b.Bytes)
	if b.Skipped != "" {
		fmt.Fprintf(w, "  no blob is reclaimed: %s\n", esc(b.Skipped))
	}
	if p.Leftovers > 0 {
		fmt.Fprintln(w, "leftovers: a killed prune left its lock; the next store open or apply restores what it left")
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(w, "integrity error: run %s: %s: %s\n", pr.Run, pr.Reason, esc(pr.Detail))
	}
}
