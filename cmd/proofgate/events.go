package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/kernel/exit"
)

func eventsVerifyCmd(g *globals) *cobra.Command {
	var asJSON bool
	var cpFile, trustFile string
	var sf stateFlags
	c := &cobra.Command{
		Use:   "verify (RUN | --all [--repo-id ID])",
		Short: "Verify a run's hash-chained event log",
		Long: `Verify every line of the run's events.ndjson: canonical form, hash, link to
the previous line, sequence, and binding to the run, source and contract.
A refusal names the line and a typed reason: broken-link, seq-gap,
foreign-binding, unchained-after-chained, malformed, torn-tail. A log sealed
into segments (events.00000001.ndjson, ... then the active events.ndjson) is
read whole, in order; a refusal then names the file too, and a missing,
reordered or damaged segment is segment-gap, segment-order or segment-torn.
With --checkpoint and --trust, also check the log against a signed
checkpoint (entries rewritten or removed after it was exported).

This proves the chain, not the history: a log forged and re-chained from
line 1, or cut back after any line, passes. 'proofgate status RUN --audit' replays
the log against the contract and run.json; a signed checkpoint (--checkpoint)
detects rewriting and truncation before it. The output says which of these
were proved ("proved", "not_proved" in --json).

With --all (no RUN), verify every run's chain in the state directory, and
with --checkpoint and --trust a state checkpoint ("events checkpoint --all"):
the same repository (root commit and --repo-id), every run it lists present
(checkpoint-run-missing), holding the signed head at the signed length
(checkpoint-truncated, checkpoint-rewritten), its chain verifying
(checkpoint-chain-refused); another repository's state directory is
checkpoint-foreign-repository. Runs planned after it are listed as
"uncovered".`,
		Args: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return stateVerify(cmd, g, &sf, cpFile, trustFile, asJSON)
			}
			if sf.repoID != "" {
				return usageErr(errors.New("--repo-id goes with --all"))
			}
			res, err := app.VerifyEvents(g.state, args[0], cpFile, trustFile)
			if res == nil {
				return classify(err)
			}
			if err := g.printEvents(res, err != nil, asJSON); err != nil {
				return err
			}
			if err != nil {
				return err
			}
			if !res.OK {
				return silent(exit.Refused)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().StringVar(&cpFile, "checkpoint", "", "signed checkpoint file to check the log against")
	c.Flags().StringVar(&trustFile, "trust", "", "trust store for --checkpoint")
	sf.register(c, "verify")
	return c
}

// printEvents reports an events verify result: JSON, or a line saying ok
// (with what was proved) or refused (with file, line and reason); nothing
// in text for unusable input, which the error says.
func (g *globals) printEvents(res *app.EventsVerified, unusable, asJSON bool) error {
	switch {
	case asJSON:
		return writeJSON(g.stdout, res)
	case res.OK:
		fmt.Fprintf(g.stdout, "ok: %d events, head %s\nproved: %s\nnot proved: %s\n", res.Length, res.Head,
			strings.Join(res.Proved, ", "), res.NotProved)
		if res.Checkpoint != nil {
			printCheckpointCover(g.stdout, res.Checkpoint, res.Length)
		}
	case unusable:
	case res.File != "":
		fmt.Fprintf(g.stdout, "refused: %s line %d: %s: %s\n", res.File, res.Line, res.Reason, res.Detail)
	case res.Line > 0:
		fmt.Fprintf(g.stdout, "refused: line %d: %s: %s\n", res.Line, res.Reason, res.Detail)
	default:
		fmt.Fprintf(g.stdout, "refused: %s: %s\n", res.Reason, res.Detail)
	}
	return nil
}

func eventsUnlockCmd(g *globals) *cobra.Command {
	var actor string
	var olderThan time.Duration
	c := &cobra.Command{
		Use:   "unlock RUN --actor NAME --older-than DUR",
		Short: "Remove a dead writer's lock from a run",
		Long: `Remove the run's writer lock only when its owner is provably dead (its pid
is gone, or was reused by a process with another start time) on this host,
and the lock is older than --older-than. Live, young, foreign-host and
unreadable locks stay. Every check process group (and cgroup) that the dead
writer recorded is killed first — never a reused pid: the group leader's
start time must match. The removal and those processes are recorded as
lock.broken with --actor.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if actor == "" {
				return usageErr(errors.New("--actor is required"))
			}
			if err := checkNames(actor, ""); err != nil {
				return err
			}
			if !cmd.Flags().Changed("older-than") {
				return usageErr(errors.New("--older-than is required (e.g. 10m)"))
			}
			u, err := app.Unlock(g.state, args[0], actor, olderThan, time.Now())
			if u == nil {
				return classify(err)
			}
			fmt.Fprintf(g.stdout, "unlocked run %s (writer pid %d on %s is dead)\n", u.ID, u.Owner.PID, esc(u.Owner.Host))
			printProcesses(g.stdout, u.Processes)
			if err != nil {
				return classify(err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&actor, "actor", "", "who unlocks (required, recorded)")
	c.Flags().DurationVar(&olderThan, "older-than", 0, "only remove a lock older than this (required)")
	return c
}

// eventsCmd returns the "events" parent command, creating it on first use.
func eventsCmd(root *cobra.Command) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == "events" {
			return c
		}
	}
	c := &cobra.Command{Use: "events", Short: "Verify, unlock and checkpoint a run's event log"}
	root.AddCommand(c)
	return c
}
