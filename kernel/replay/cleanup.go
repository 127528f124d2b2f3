package replay

import "github.com/proofgate/proofgate/kernel/eventlog"

// TypeCleanup records what `proofgate clean --apply --run RUN` removed
// inside the run contract's cleanup roots (internal/cleanup). It changes no
// state; the replay checks its shape.
const TypeCleanup = "cleanup.recorded"

// CleanupData is cleanup.recorded's data.
type CleanupData struct {
	Actor string        `json:"actor,omitempty"`
	Roots []CleanupRoot `json:"roots"`
}

// CleanupRoot is one root's removed (and kept) entries.
type CleanupRoot struct {
	Root    string         `json:"root"`
	Missing bool           `json:"missing,omitempty"`
	Removed []CleanupEntry `json:"removed"`
	Skipped []CleanupEntry `json:"skipped,omitempty"`
}

// CleanupEntry is one removed entry, relative to the repository.
type CleanupEntry struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

func (f *Folder) applyCleanup(line int, _ eventlog.Event, d CleanupData) error {
	if d.Roots == nil {
		return bad(line, ReasonBadEvent, "%s: roots: required", TypeCleanup)
	}
	return nil
}
