package run

import "github.com/proofgate/proofgate/kernel/replay"

// maxChanges is how many changed paths internal/source records in a work-tree
// state (source.State.Changes); a list that long may be cut.
const maxChanges = 20

// StaleInfo says why a run is STALE, from the state.changed event that
// moved it there: the recorded reason, the state the run left (VERIFYING:
// the tree changed while the checks ran, typically a check writing into
// it) and the changed paths that event recorded. It is what `run`,
// `status` and their --json report as "stale"; it is never part of
// run.json.
type StaleInfo struct {
	Reason string       `json:"reason"`
	From   replay.State `json:"from"`
	// Paths are the work tree's changed paths as recorded (at most 20);
	// PathsCapped is set when the list reached that cap, so more may have
	// changed ('git status' lists them all).
	Paths       []string `json:"paths,omitempty"`
	PathsCapped bool     `json:"paths_capped,omitempty"`
}

// staleInfo converts a STALE transition; nil in, nil out.
func staleInfo(d *replay.StateData) *StaleInfo {
	if d == nil {
		return nil
	}
	si := &StaleInfo{Reason: d.Reason, From: d.From}
	if d.Worktree != nil {
		si.Paths = d.Worktree.Changes
		si.PathsCapped = len(si.Paths) >= maxChanges
	}
	return si
}

// Stale says why the run is STALE, or nil when it is not.
func (r *Run) Stale() *StaleInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fold.State() != replay.Stale {
		return nil
	}
	return staleInfo(r.fold.StaleChange())
}
