package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/exit"
)

// printCheckpointCover says, under an ok events verify, what the checkpoint
// covered and what it did not.
func printCheckpointCover(w io.Writer, c *app.CheckpointCover, total int) {
	fmt.Fprintf(w, "checkpoint: covers events 1..%d of %d of run %s (head %s), signed at %s by key %s\n",
		c.Length, total, c.RunID, c.Head, esc(c.Time), c.KeyID)
	if total > c.Length {
		fmt.Fprintf(w, "checkpoint: events %d..%d came after it (chain only; 'proofgate events checkpoint %s' signs a new one)\n", c.Length+1, total, c.RunID)
	}
}

// stateFlags are the flags of the state-wide forms: events checkpoint
// --all and events verify --all.
type stateFlags struct {
	all    bool
	repoID string
}

func (f *stateFlags) register(c *cobra.Command, verb string) {
	c.Flags().BoolVar(&f.all, "all", false, verb+" every run in the state directory at once (a state checkpoint), bound to this repository")
	c.Flags().StringVar(&f.repoID, "repo-id", "", "with --all: a repository id (e.g. owner/name) bound beside the root commit; forks share a root commit, so give it to tell them apart (the same value on verify)")
}

// repository is the identity of the repository proofgate runs in: its
// root commit, and the --repo-id given.
func (f *stateFlags) repository(ctx context.Context) (checkpoint.Repository, error) {
	if len(f.repoID) > 256 || printable.Escape(f.repoID) != f.repoID {
		return checkpoint.Repository{}, usageErr(errors.New("--repo-id: at most 256 printable characters"))
	}
	dir, err := repoDir(ctx)
	if err != nil {
		return checkpoint.Repository{}, err
	}
	return app.RootRepository(ctx, dir, f.repoID)
}

// stateCheckpoint is events checkpoint --all.
func stateCheckpoint(cmd *cobra.Command, g *globals, sf *stateFlags, keyRef, out string, force, asJSON bool) error {
	repo, err := sf.repository(cmd.Context())
	if err != nil {
		return err
	}
	s, err := loadSigner(keyRef)
	if err != nil {
		return err
	}
	if out != "" {
		if err := g.preflightOutput("-o", out, force); err != nil {
			return err
		}
	}
	rec, err := app.CheckpointState(repo, app.CheckpointOptions{State: g.state, Signer: s, Now: time.Now()})
	if err != nil {
		return classify(err)
	}
	if out != "" {
		if err := writeOutput(out, rec.Envelope, force); err != nil {
			return outputErr(fmt.Errorf("the state checkpoint is recorded in %s; writing %s: %w", rec.Path, out, err))
		}
	}
	if asJSON {
		out := map[string]any{"runs": rec.Runs, "repository": rec.Repository,
			"time": rec.Time, "key_id": rec.KeyID, "file": rec.Path}
		if len(rec.TornTail) > 0 {
			out["torn_tail"] = rec.TornTail
		}
		return writeJSON(g.stdout, out)
	}
	fmt.Fprintf(g.stdout, "state checkpoint of %d runs (repository root %s, id %q)\n%s\n", len(rec.Runs), rec.Repository.Root, esc(rec.Repository.ID), rec.Path)
	for _, id := range rec.TornTail {
		n := 0
		for _, r := range rec.Runs {
			if r.Run == id {
				n = r.Length
			}
		}
		fmt.Fprintf(g.stdout, "run %s: signed at its %d complete events; its log ends in an incomplete line (a writer appending, or killed mid-append)\n", id, n)
	}
	return nil
}

// stateVerify is events verify --all [--checkpoint F --trust T]: every
// run's chain, then (with a checkpoint) the state checkpoint.
func stateVerify(cmd *cobra.Command, g *globals, sf *stateFlags, cpFile, trustFile string, asJSON bool) error {
	if (cpFile == "") != (trustFile == "") {
		return usageErr(errors.New("--checkpoint and --trust go together"))
	}
	res, err := app.VerifyStateChains(g.state)
	if err != nil {
		return classify(err)
	}
	if cpFile != "" && res.OK {
		repo, err := sf.repository(cmd.Context())
		if err != nil {
			return err
		}
		if err := res.CheckCheckpoint(g.state, repo, cpFile, trustFile); err != nil {
			return classify(err)
		}
	}
	return printStateVerify(g, res, asJSON)
}

func printStateVerify(g *globals, res *app.StateVerified, asJSON bool) error {
	if asJSON {
		if err := writeJSON(g.stdout, res); err != nil {
			return err
		}
	} else if res.OK {
		fmt.Fprintf(g.stdout, "ok: %d runs, every chain verifies\n", len(res.Runs))
		if c := res.Checkpoint; c != nil {
			fmt.Fprintf(g.stdout, "state checkpoint: covers %d runs of repository root %s id %q, signed at %s by key %s; none deleted, truncated or rewritten\n",
				c.Runs, c.Repository.Root, esc(c.Repository.ID), esc(c.Time), c.KeyID)
			if len(res.Uncovered) > 0 {
				fmt.Fprintf(g.stdout, "state checkpoint: %d runs came after it (chain only): %s\n", len(res.Uncovered), strings.Join(res.Uncovered, ", "))
			}
		}
	} else {
		where := ""
		if res.RunID != "" {
			where = "run " + res.RunID + ": "
		}
		if res.File != "" {
			where += fmt.Sprintf("%s line %d: ", res.File, res.Line)
		}
		fmt.Fprintf(g.stdout, "refused: %s%s: %s\n", where, res.Reason, esc(res.Detail))
	}
	if !res.OK {
		return silent(exit.Refused)
	}
	return nil
}

func checkpointCmd(g *globals) *cobra.Command {
	var keyRef, out string
	var asJSON, force bool
	var sf stateFlags
	c := &cobra.Command{
		Use:   "checkpoint (RUN | --all [--repo-id ID]) --key key.pem [-o FILE] [--force]",
		Short: "Sign a checkpoint of a run's event chain, or of every run (--all)",
		Long: `Sign {run, length, head, time} of the run's event log under its writer lock,
store it as checkpoints/<length>.dsse.json in the run directory (and in FILE
with -o), and record a checkpoint.signed event. "events verify RUN
--checkpoint FILE --trust trust.json" later detects entries rewritten or
removed before that point. An existing FILE is refused unless --force; a
FILE inside the run store (<state>/runs) always is.

With --all (no RUN), sign one state checkpoint over every run in the state
directory: each run's id, chain length and head (every chain is verified
first), bound to this repository (its root commit, and --repo-id if given),
stored as <state>/runs/.state-checkpoints/state-<ns>.dsse.json. "events verify --all
--checkpoint FILE --trust trust.json" later detects a deleted run, a
truncated or rewritten one, and a state directory of another repository.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return stateCheckpoint(cmd, g, &sf, keyRef, out, force, asJSON)
			}
			if sf.repoID != "" {
				return usageErr(errors.New("--repo-id goes with --all"))
			}
			s, err := loadSigner(keyRef)
			if err != nil {
				return err
			}
			if out != "" {
				if err := g.preflightOutput("-o", out, force); err != nil {
					return err
				}
			}
			rec, err := app.CheckpointRun(args[0], app.CheckpointOptions{State: g.state, Signer: s, Now: time.Now()})
			if err != nil {
				return classify(err)
			}
			if out != "" {
				if err := writeOutput(out, rec.Envelope, force); err != nil {
					return outputErr(fmt.Errorf("the checkpoint is recorded in %s; writing %s: %w", rec.Path, out, err))
				}
			}
			if asJSON {
				return writeJSON(g.stdout, map[string]any{"run_id": rec.Run, "length": rec.Length, "head": rec.Head,
					"time": rec.Time, "key_id": rec.KeyID, "file": rec.Path})
			}
			fmt.Fprintf(g.stdout, "checkpoint of run %s at %d events, head %s\n%s\n", rec.Run, rec.Length, rec.Head, rec.Path)
			return nil
		},
	}
	c.Flags().StringVar(&keyRef, "key", "", "private key: PKCS#8 PEM file or env:VAR")
	c.Flags().StringVarP(&out, "output", "o", "", "also write the checkpoint to FILE")
	c.Flags().BoolVar(&force, "force", false, "replace an existing FILE")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	sf.register(c, "sign")
	return c
}
