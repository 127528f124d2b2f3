package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/evidence"
)

type verdictFlags struct {
	verdict, reason, actor, runID, dir, observation string
	artifacts                                       []string
	asJSON                                          bool
}

func evidenceVerdictCmd(g *globals) *cobra.Command {
	var f verdictFlags
	c := &cobra.Command{
		Use:   "verdict COLLECTION --verdict confirmed|dubious|refuted|unable-to-check --reason TEXT --actor NAME [--run RUN]",
		Short: "Record a verdict on the claim a collection was made for",
		Long: `Record what the evidence of COLLECTION (a collection directory, or a
collection id inside --dir or the run's evidence/ directory) says about its
claim: confirmed, dubious, refuted or unable-to-check, with a reason and the
actor who judged. The verdict is written once, as verdict.json in the
collection; a second verdict is refused.

A collection whose command timed out, overflowed its output limit or could
not start proves nothing about the claim: only unable-to-check is accepted,
and the record names the limitation (any other verdict is refused, exit 1).

--observation tool=NAME@TARGET records what an approved optional tool (a
browser, a profiler) observed about TARGET; it needs at least one
--artifact FILE (repeatable), copied into the collection before the record
is written.

With --run RUN the verdict is chained into the run's log as
evidence.verdict; the collection must have been collected with the same
--run, and its report must still be the one the log recorded.

Example:
  proofgate evidence verdict 20261201T153600.123Z-1a2b3c4d --run latest \
      --verdict confirmed --reason "503 with the cache stopped" --actor alice`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runVerdict(g, f, args[0]) },
	}
	c.Flags().StringVar(&f.verdict, "verdict", "", "confirmed | dubious | refuted | unable-to-check (required)")
	c.Flags().StringVar(&f.reason, "reason", "", "why (required)")
	c.Flags().StringVar(&f.actor, "actor", "", "who judges (required)")
	c.Flags().StringVar(&f.runID, "run", "", "chain the verdict into this run's log")
	c.Flags().StringVar(&f.dir, "dir", "", "evidence directory holding COLLECTION (default: the run's evidence/)")
	c.Flags().StringVar(&f.observation, "observation", "", "tool=NAME@TARGET: what an approved optional tool observed")
	c.Flags().StringArrayVar(&f.artifacts, "artifact", nil, "an artifact of the observation (repeatable; needs --observation)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the verdict record as JSON")
	return c
}

func runVerdict(g *globals, f verdictFlags, arg string) error {
	if f.verdict == "" || f.reason == "" || f.actor == "" {
		return usageErr(errors.New("--verdict, --reason and --actor are required"))
	}
	if err := checkNames(f.actor, f.reason); err != nil {
		return err
	}
	var obs *evidence.ObservationInput
	switch {
	case f.observation != "":
		tool, target, err := evidence.ParseObservation(f.observation)
		if err != nil {
			return evidenceErr(g, f.asJSON, err)
		}
		obs = &evidence.ObservationInput{Tool: tool, Target: target, Artifacts: f.artifacts}
	case len(f.artifacts) > 0:
		return usageErr(errors.New("--artifact belongs to an --observation tool=NAME@TARGET"))
	}
	j, err := app.Verdict(app.VerdictOptions{State: g.state, Collection: arg, Dir: f.dir, Run: f.runID,
		Verdict: f.verdict, Reason: f.reason, Actor: f.actor, Observation: obs})
	if err != nil {
		return evidenceErr(g, f.asJSON, err)
	}
	rec := j.Record
	if f.asJSON {
		return writeJSON(g.stdout, rec)
	}
	fmt.Fprintf(g.stdout, "collection %s: %s by %s\n", rec.Collection, rec.Verdict, esc(rec.Actor))
	if rec.Limitation != "" {
		fmt.Fprintf(g.stdout, "  limitation: %s\n", rec.Limitation)
	}
	if j.Run != "" {
		fmt.Fprintf(g.stdout, "  chained into run %s as evidence.verdict\n", j.Run)
	}
	return nil
}
