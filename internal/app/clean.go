package app

import (
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/internal/cleanup"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// CleanOptions say which cleanup roots to clean, and whether for real.
type CleanOptions struct {
	// Repo is the repository the roots are relative to; State its state
	// directory, never cleaned.
	Repo, State string
	// Run, when set, is the run whose frozen contract declares the roots;
	// an apply records what it removed in that run's log, by Actor.
	// Without it the roots come from the contract file Contract.
	Run, Actor, Contract string
	// Apply removes; without it nothing changes.
	Apply bool
}

// Cleaned is what a clean of the cleanup roots did or would do; its JSON
// is 'proofgate clean roots --json'.
type Cleaned struct {
	*cleanup.Result
	RunID    string `json:"run_id,omitempty"`
	Recorded bool   `json:"recorded"`
	Removed  int    `json:"removed"`
}

// CleanRoots removes (or, without Apply, lists) the contents of the
// contract's cleanup roots (cleanup.Clean). No roots is a usage error; a
// root refused before anything is removed is refused, a failed removal or
// record the environment's. A run or contract that cannot be opened is
// returned as it is, for the caller to classify.
func CleanRoots(o CleanOptions) (*Cleaned, error) {
	var r *run.Run
	var roots []string
	if o.Run != "" {
		var err error
		if r, err = run.Open(o.State, o.Run); err != nil {
			return nil, err
		}
		defer r.Close()
		roots = r.Contract.Cleanup
	} else {
		ct, err := contract.Load(o.Contract, "")
		if err != nil {
			return nil, err
		}
		roots = ct.Cleanup
	}
	if len(roots) == 0 {
		return nil, exit.Wrap(exit.Usage, errors.New("the contract declares no cleanup roots (add `cleanup: [dir, ...]`)"))
	}
	res, cerr := cleanup.Clean(o.Repo, o.State, roots, o.Apply)
	out := &Cleaned{Result: res}
	if res != nil {
		out.Removed = res.Removed()
	}
	if r != nil && res != nil && res.Applied {
		out.RunID = r.ID
		if _, err := r.Append(replay.TypeCleanup, cleanupData(res, o.Actor)); err != nil {
			return nil, exit.Wrap(exit.Environment, fmt.Errorf("record cleanup in run %s: %w", r.ID, err))
		}
		out.Recorded = true
	}
	if cerr != nil {
		var ce *cleanup.Error
		if errors.As(cerr, &ce) && ce.Reason != cleanup.ReasonIO {
			return nil, exit.Wrap(exit.Refused, cerr)
		}
		return nil, exit.Wrap(exit.Environment, cerr)
	}
	return out, nil
}

// cleanupData is the cleanup.recorded event of res.
func cleanupData(res *cleanup.Result, actor string) replay.CleanupData {
	d := replay.CleanupData{Actor: actor, Roots: []replay.CleanupRoot{}}
	for _, rt := range res.Roots {
		cr := replay.CleanupRoot{Root: rt.Root, Missing: rt.Missing, Removed: []replay.CleanupEntry{}}
		for _, e := range rt.Entries {
			cr.Removed = append(cr.Removed, replay.CleanupEntry(e))
		}
		for _, e := range rt.Skipped {
			cr.Skipped = append(cr.Skipped, replay.CleanupEntry(e))
		}
		d.Roots = append(d.Roots, cr)
	}
	return d
}
