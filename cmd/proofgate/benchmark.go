package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bench"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
)

func benchmarkCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "benchmark",
		Short: "Report over run history and compare it with benchmark baselines",
		Long: `Report over the repository's run history and compare it with the
baselines of a benchmark manifest (.proofgate/benchmark.yaml or .json).

A manifest lists suites of tasks, each with acceptance criteria; a contract
binds its runs to one task with

    benchmark: {suite: api, task: health-503}

'benchmark baseline' records what a baseline harness (a person, another tool)
observed doing a task; 'benchmark report' reconciles every run and says, per
task, whether the latest bound run is comparable with the baseline and how
each resource (duration, attempts, human-review time) moved. There is no
composite score.`,
	}
	var manifest string
	c.PersistentFlags().StringVar(&manifest, "manifest", "", "the benchmark manifest (default .proofgate/benchmark.yaml, else .proofgate/benchmark.json)")
	c.AddCommand(benchmarkReportCmd(g, &manifest), benchmarkBaselineCmd(g, &manifest))
	return c
}

func benchmarkReportCmd(g *globals, manifest *string) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "report [--json]",
		Short: "Reconcile every run and report facts, rates and comparability",
		Long: `Reconcile every run of the state directory (as 'proofgate status --audit' does,
without moving any run to STALE) and report, in run-id order, each run's
checks, outcomes, evidence, approvals, retries, staleness and duration, with
aggregate rates. Runs that do not reconcile are listed under "refused" with
their reason and counted nowhere else; the command then exits 1.

With a manifest, each task is compared with its baseline: comparable, or not
with a typed reason (baseline-missing, baseline-not-run,
baseline-evidence-missing, harness-not-run, harness-not-complete).

Examples:
    proofgate benchmark report
    proofgate benchmark report --json | jq '.tasks[] | {task, comparable, reason}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := app.ManifestPath(*manifest, false)
			if err != nil {
				return err
			}
			rep, err := app.BenchmarkReport(g.state, path)
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(g.stdout, rep); err != nil {
					return err
				}
			} else {
				printBenchReport(g, rep)
			}
			if len(rep.Refused) > 0 {
				if asJSON {
					return silent(exit.Refused)
				}
				return refusedErr(fmt.Errorf("%d runs do not reconcile (listed above)", len(rep.Refused)))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printBenchReport(g *globals, rep *bench.Report) {
	w := tabwriter.NewWriter(g.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RUN\tSTATE\tTASK\tCHECKS\tPASSED\tAPPROVALS\tRETRIES\tDURATION")
	for _, r := range rep.Runs {
		task := "-"
		if r.Task != "" {
			task = r.Suite + "/" + r.Task
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.RunID, r.State, printable.Escape(task), r.Checks, r.Outcomes["passed"], r.Approvals, r.Retries, time.Duration(r.DurationMS)*time.Millisecond)
	}
	w.Flush()
	a := rep.Aggregate
	fmt.Fprintf(g.stdout, "%d runs: complete %.4g, blocked %.4g, stale %.4g, checks passed %.4g of %d\n", a.Runs, a.CompleteRate, a.BlockedRate, a.StaleRate, a.CheckPassRate, a.Checks)
	for _, r := range rep.Refused {
		fmt.Fprintf(g.stdout, "refused: %s\n", printable.Escape(r.String()))
	}
	for _, id := range rep.Unmatched {
		fmt.Fprintf(g.stdout, "run %s: bound to a task the manifest does not declare\n", id)
	}
	for _, t := range rep.Tasks {
		if !t.Comparable {
			fmt.Fprintf(g.stdout, "task %s/%s: not comparable: %s\n", t.Suite, t.Task, t.Reason)
			continue
		}
		var parts []string
		for _, r := range t.Resources {
			if r.Delta == nil {
				parts = append(parts, r.Name+" "+r.Direction)
			} else {
				parts = append(parts, fmt.Sprintf("%s %s (%+.4g)", r.Name, r.Direction, *r.Delta))
			}
		}
		fmt.Fprintf(g.stdout, "task %s/%s: comparable with run %s: %s\n", t.Suite, t.Task, t.LatestRun, strings.Join(parts, ", "))
	}
}

func benchmarkBaselineCmd(g *globals, manifest *string) *cobra.Command {
	var (
		o                           bench.BaselineOptions
		criteria                    []string
		duration, review, actorFlag string
		attempts                    int64
		asJSON                      bool
	)
	c := &cobra.Command{
		Use:   "baseline --task ID --status passed|failed|not-run --evidence-file F [--criteria C,...]",
		Short: "Record a task's baseline observation in the manifest (the only write path)",
		Long: `Record what a baseline harness observed doing one task, once.

--criteria lists the task's acceptance criteria the evidence covers; the task
is comparable only when they cover all of them. The evidence file's SHA-256
is stored as evidence_digest. An unknown task, a task that already has a
baseline, or a criterion the task does not have is refused (exit 1) with the
reason, and the manifest is left as it was. The new manifest is written to a
temporary file, fsynced and renamed into place, and only if the manifest did
not change meanwhile (manifest-changed). A YAML manifest keeps its comments.

Examples:
    proofgate benchmark baseline --task health-503 --status passed \
        --criteria returns-503,logs-cause --evidence-file notes/health.txt \
        --duration 1h --attempts 2 --review-time 10m --actor alice
    proofgate benchmark baseline --task other --status not-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := app.ManifestPath(*manifest, true)
			if err != nil {
				return err
			}
			o.Criteria, o.Actor, o.Now = criteria, actorFlag, time.Now()
			if err := baselineFlags(cmd, &o, duration, review, attempts); err != nil {
				return err
			}
			b, err := app.RecordBaseline(path, o)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, struct {
					Manifest string          `json:"manifest"`
					Task     string          `json:"task"`
					Baseline *bench.Baseline `json:"baseline"`
				}{path, o.Task, b})
			}
			fmt.Fprintf(g.stdout, "recorded baseline %s for task %s in %s (evidence %s)\n", b.Status, o.Task, path, b.EvidenceDigest)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.Task, "task", "", "the task id (required)")
	f.StringVar(&o.Status, "status", "", "passed | failed | not-run (required)")
	f.StringVar(&o.EvidenceFile, "evidence-file", "", "the baseline's evidence (required unless not-run)")
	f.StringSliceVar(&criteria, "criteria", nil, "the task's criteria the evidence covers")
	f.StringVar(&duration, "duration", "", "how long the baseline took (e.g. 1h30m)")
	f.Int64Var(&attempts, "attempts", -1, "how many attempts the baseline needed")
	f.StringVar(&review, "review-time", "", "human-review time the baseline needed (e.g. 10m)")
	f.StringVar(&actorFlag, "actor", "", "who observed the baseline")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func baselineFlags(cmd *cobra.Command, o *bench.BaselineOptions, duration, review string, attempts int64) error {
	if o.Task == "" || o.Status == "" {
		return usageErr(errors.New("--task and --status are required"))
	}
	if o.Actor != "" {
		if err := printable.Check("--actor", o.Actor); err != nil {
			return usageErr(err)
		}
	}
	for _, p := range []struct {
		flag, v string
		dst     **int64
	}{{"--duration", duration, &o.DurationMS}, {"--review-time", review, &o.ReviewMS}} {
		if p.v == "" {
			continue
		}
		d, err := contract.ParseDuration(p.v)
		if err != nil {
			return usageErr(fmt.Errorf("%s: %w", p.flag, err))
		}
		ms := time.Duration(d).Milliseconds()
		*p.dst = &ms
	}
	if cmd.Flags().Changed("attempts") {
		if attempts < 0 {
			return usageErr(errors.New("--attempts: negative"))
		}
		o.Attempts = &attempts
	}
	return nil
}
