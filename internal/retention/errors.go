package retention

import (
	"errors"
	"fmt"
	"sort"

	"github.com/proofgate/proofgate/kernel/exit"
)

// Reason is the typed cause of a refused archive, prune or setting.
type Reason string

// Reasons. Each reader of an archived run (status, list, events
// verify, bundle export, output) reports one of the archive reasons when
// it cannot read the run's history; docs/SPEC.md lists them.
const (
	// ReasonArchiveMissing: the prune log recorded the run's archive and
	// the file is gone (or the run directory is).
	ReasonArchiveMissing Reason = "archive-missing"
	// ReasonArchiveUnrecorded: a placeholder names an archive the prune
	// log never recorded.
	ReasonArchiveUnrecorded Reason = "archive-unrecorded"
	// ReasonArchiveTampered: the archive's bytes do not hash to the
	// digest the prune log recorded.
	ReasonArchiveTampered Reason = "archive-tampered"
	// ReasonArchiveMalformed: the archive hashes right but does not hold
	// a run (unsafe names, bounds, a corrupt stream).
	ReasonArchiveMalformed Reason = "archive-malformed"
	// ReasonPlaceholder: the placeholder is unreadable or disagrees with
	// the prune log.
	ReasonPlaceholder Reason = "placeholder-mismatch"
	// ReasonPruneLog: the prune log itself does not verify.
	ReasonPruneLog Reason = "prune-log"
	// ReasonArchived: a write to an archived run (it is read-only).
	ReasonArchived Reason = "run-archived"
	// ReasonLooser: a flag or variable asks for less retention than the
	// repository's base.
	ReasonLooser Reason = "looser-than-base"
	// ReasonSetting: a malformed setting.
	ReasonSetting Reason = "bad-setting"
	// ReasonBusy: another prune holds the state directory.
	ReasonBusy Reason = "prune-running"
	// ReasonIntegrity: apply refused because the state directory has an
	// integrity error (a recorded archive is missing, the log is broken).
	ReasonIntegrity Reason = "integrity"
	// ReasonChain: with a key, apply refused because a run's chain does
	// not verify.
	ReasonChain Reason = "chain"
)

// Error is a refusal with its typed reason and the run it concerns.
type Error struct {
	Reason Reason
	Run    string // "" when it concerns no one run
	Detail string
	Err    error
}

func (e *Error) Error() string {
	if e.Run == "" {
		return fmt.Sprintf("prune: %s: %s", e.Reason, e.Detail)
	}
	return fmt.Sprintf("run %s: %s: %s", e.Run, e.Reason, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes every refusal exit 1 (exit.Refused), except bad settings, which
// are usage errors.
func (e *Error) Is(target error) bool {
	if e.Reason == ReasonLooser || e.Reason == ReasonSetting {
		return target == exit.Usage
	}
	return target == exit.Refused
}

// IsReason reports whether err is an *Error with reason r.
func IsReason(err error, r Reason) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == r
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
