package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/contract"
)

// connect opens the runtimes c needs before anything is planned or run,
// so that a missing Docker daemon is an environment error (exit 4) and not
// a half-made run, and removes the containers a crashed harness left
// behind (reported on progress).
func connect(ctx context.Context, c *contract.Resolved, progress io.Writer) (*app.Runtimes, error) {
	rts := app.Connect(ctx, c, app.ConnectOptions{CollectGarbage: true})
	if err := rts.Unavailable["docker"]; err != nil {
		return nil, envErr(fmt.Errorf("the contract runs checks in Docker, but %w (set DOCKER_HOST, or start a daemon)", err))
	}
	if len(rts.Collected) > 0 && progress != nil {
		fmt.Fprintf(progress, "gc: removed %d container(s) left by a crashed harness\n", len(rts.Collected))
	}
	return rts, nil
}

func gcCmd(g *globals) *cobra.Command {
	var cacheRoot string
	c := &cobra.Command{
		Use:   "gc",
		Short: "Kill check processes and remove sandbox containers left behind by a crashed harness",
		Long: `Kill the process-runtime checks (process groups and cgroups recorded in
the runs of --state) whose harness is provably dead on this host — never a
reused pid: the group leader's start time must match — and mark their
records for the next 'events unlock' to report. Then remove ProofGate
containers (labelled io.proofgate.run) whose harness is provably dead on
this host, or that are older than 24h. Then remove the run-lifetime cache
directories (contract lifetime: run) under the cache root whose run's
harness is gone (its owner lock is free). Live checks of running harnesses
are never touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := app.CollectOrphans(cmd.Context(), app.OrphanOptions{State: g.state, CacheRoot: cacheRoot, Getenv: os.Getenv, Now: time.Now()})
			printOrphans(g.stdout, res)
			if err != nil {
				return err
			}
			for _, id := range res.Containers {
				fmt.Fprintln(g.stdout, "removed", id)
			}
			fmt.Fprintf(g.stdout, "%d container(s) removed\n", len(res.Containers))
			return nil
		},
	}
	c.Flags().StringVar(&cacheRoot, "cache-root", "", "the cache root whose run-lifetime cache directories to sweep (default $"+cache.EnvRoot+", else $RUNNER_TEMP/proofgate-cache, else the user cache directory's proofgate/caches)")
	return c
}

// printOrphans says what clean orphans did with the check processes and
// run-lifetime caches of dead harnesses.
func printOrphans(w io.Writer, res *app.Orphans) {
	for _, p := range res.Processes {
		fmt.Fprintf(w, "run %s: ", p.Run)
		printProcesses(w, []lock.Killed{p.Killed})
	}
	for _, r := range res.RunCaches {
		switch r.Action {
		case cache.ActionRemoved:
			fmt.Fprintf(w, "removed run cache %s (%d bytes)\n", esc(r.Name), r.Bytes)
		case cache.ActionSkipped:
			fmt.Fprintf(w, "kept run cache %s: %s\n", esc(r.Name), esc(r.Reason))
		}
	}
}

// printProcesses says what became of the process records of a dead harness.
func printProcesses(w io.Writer, ks []lock.Killed) {
	for _, k := range ks {
		what := fmt.Sprintf("process group %d", k.PGID)
		if k.PGID == 0 {
			what = "processes"
		}
		if k.Cgroup != "" {
			what += " (cgroup " + esc(k.Cgroup) + ")"
		}
		check := esc(k.Check)
		switch k.Result {
		case lock.ResultKilled:
			fmt.Fprintf(w, "killed %s of check %s\n", what, check)
		case lock.ResultPidReused:
			fmt.Fprintf(w, "not signalled: %s of check %s (its pid now runs another process)\n", what, check)
		default:
			fmt.Fprintf(w, "%s of check %s: %s\n", what, check, esc(string(k.Result)))
		}
	}
}
