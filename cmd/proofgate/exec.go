package main

import (
	"context"
	"fmt"
	"io"
	goruntime "runtime"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// execFlags are shared by run, exec and retry.
type execFlags struct {
	jobs      int
	asJSON    bool
	quiet     bool
	cacheRoot string
}

func (e *execFlags) register(c *cobra.Command) {
	c.Flags().IntVar(&e.jobs, "jobs", 0, "checks to run in parallel (default: the number of CPUs)")
	c.Flags().BoolVar(&e.asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVarP(&e.quiet, "quiet", "q", false, "no progress on stderr")
	registerCacheRoot(c, &e.cacheRoot)
	c.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("jobs") {
			e.jobs = goruntime.NumCPU()
		}
		if e.jobs < 1 {
			return usageErr(fmt.Errorf("--jobs must be at least 1, not %d", e.jobs))
		}
		_, err := heartbeat() // refused before a run is planned
		return err
	}
}

// execute runs a planned run and reports it; the exit code follows the state.
func (e *execFlags) execute(ctx context.Context, g *globals, r *run.Run) error {
	progress := e.progress(g)
	p, err := connect(ctx, r.Contract, progress)
	if err != nil {
		return err
	}
	defer p.Close()
	return e.executeWith(ctx, g, r, p)
}

func (e *execFlags) progress(g *globals) io.Writer {
	if e.quiet {
		return nil
	}
	return g.stderr
}

// executeWith runs a planned run with connected runtimes.
func (e *execFlags) executeWith(ctx context.Context, g *globals, r *run.Run, p *app.Runtimes) error {
	repo, err := repoDir(ctx)
	if err != nil {
		return err
	}
	progress := e.progress(g)
	if progress != nil {
		fmt.Fprintf(progress, "run %s: %d checks, --jobs %d\n", r.ID, len(r.Contract.Checks), e.jobs)
	}
	hb, err := heartbeat()
	if err != nil {
		return err
	}
	caches, err := cacheStore(r.Contract, e.cacheRoot, repo)
	if err != nil {
		return err
	}
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: g.state, Runtimes: p.Providers, Jobs: e.jobs,
		Progress: textProgress(progress), Heartbeat: hb, Caches: caches}); err != nil {
		return classify(err)
	}
	return report(g, r.Report(), r.Stale(), e.asJSON, e.quiet)
}

// runDoc is run --json: the report and, for a STALE run, why.
type runDoc struct {
	*replay.Report
	Stale *run.StaleInfo `json:"stale,omitempty"`
}

// report prints a run's result and returns the state's exit code.
func report(g *globals, rep *replay.Report, stale *run.StaleInfo, asJSON, quiet bool) error {
	if asJSON {
		if err := writeJSON(g.stdout, runDoc{rep, stale}); err != nil {
			return err
		}
	} else {
		printReport(g.stdout, rep, stale)
		printFailures(g, rep)
	}
	return stateExit(rep.State)
}

func stateExit(s replay.State) error {
	switch s {
	case replay.Complete:
		return nil
	case replay.AwaitingApproval:
		return silent(exit.Awaiting)
	case replay.Planned, replay.Implementing:
		return nil
	}
	return silent(exit.Refused)
}

func printReport(w io.Writer, rep *replay.Report, stale *run.StaleInfo) {
	fmt.Fprintf(w, "run %s: %s\n", rep.RunID, rep.State)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOUTCOME\tEXIT\tDURATION\tDETAIL")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", esc(c.ID), esc(string(c.Outcome)), c.ExitCode, time.Duration(c.DurationMS)*time.Millisecond, esc(c.Detail))
	}
	tw.Flush()
	if rep.VerificationDigest != "" {
		fmt.Fprintf(w, "verification_digest %s\n", rep.VerificationDigest)
	}
	for _, d := range rep.Decisions {
		fmt.Fprintf(w, "decision %s by %s at %s %s\n", esc(d.Decision), esc(d.Actor), esc(d.Time), esc(d.Reason))
	}
	printAuthorizations(w, rep)
	switch rep.State {
	case replay.AwaitingApproval:
		fmt.Fprintf(w, "next: proofgate approve %s --actor NAME\n", rep.RunID)
	case replay.Blocked:
		fmt.Fprintf(w, "next: 'proofgate output %s CHECK' shows why (its stderr and stdout); fix, commit, then 'proofgate retry %s'\n", rep.RunID, rep.RunID)
	case replay.Stale:
		printStale(w, rep.RunID, stale)
	}
}

func execCmd(g *globals) *cobra.Command {
	var ef execFlags
	var sf shardFlags
	c := &cobra.Command{
		Use:   "exec RUN",
		Short: "Execute a planned run",
		Long: `Execute the checks of a run made with 'proofgate plan' (PLANNED), in
dependency order, --jobs at a time, with the contract frozen at planning.
Like 'proofgate run': exit 3 when every check passed and the run awaits
approval, 1 when it is BLOCKED. RUN is a run id or "latest".

With --shard I/N --out DIR (--key K | --keyless) only the checks of shard
I of N (a deterministic assignment that keeps each depends_on chain in one
shard) run, into the new shard directory DIR, which is then signed; the run
stays PLANNED, and 'proofgate merge RUN DIR...' merges the N shards (exit 0
once the shard is written, whatever its checks' outcomes: the merge decides).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if on, err := sf.active(cmd); err != nil || on {
				if err != nil {
					return err
				}
				return sf.execShard(ctx, cmd, g, &ef, args[0])
			}
			r, err := run.Open(g.state, args[0])
			if err != nil {
				return classify(err)
			}
			defer r.Close()
			return ef.execute(ctx, g, r)
		},
	}
	ef.register(c)
	sf.register(c)
	return c
}
