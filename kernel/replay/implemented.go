package replay

import (
	"regexp"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// ImplementedBy is run.planned's implemented_by (ADR 0017): the run whose
// agent sessions produced the tree this run verifies. The implementation
// run stays bound to the tree its agent started from; its successor binds
// the tree the agent left, and names the implementation run's chain at the
// moment it was planned (head and length: the implementation run's log
// then gains exactly one more line, its state.changed to SUPERSEDED by the
// successor), its source and its contract, which must be the successor's.
type ImplementedBy struct {
	Run      string `json:"run"`
	Head     string `json:"head"`
	Length   int    `json:"length"`
	Source   Source `json:"source"`
	Contract string `json:"contract"`
}

// runIDRE is the shape of a run id (internal/run's NewID).
var runIDRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{8}$`)

// objectRE is a git object name: SHA-1 or SHA-256, lowercase hex.
var objectRE = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// minImplementationLength is the shortest log an implementation run can
// have: run.planned and its state.changed to IMPLEMENTING.
const minImplementationLength = 2

// ValidRunID reports whether id has the shape of a run id.
func ValidRunID(id string) bool { return runIDRE.MatchString(id) }

// checkImplementedBy checks the shape of run.planned's implemented_by on
// line 1 of run e.Run; a nil field is a run planned without one.
func checkImplementedBy(line int, e eventlog.Event, d PlannedData) error {
	ib := d.ImplementedBy
	if ib == nil {
		return nil
	}
	switch {
	case d.Supersedes != "":
		return bad(line, ReasonBadEvent, "run.planned names both supersedes and implemented_by")
	case !ValidRunID(ib.Run) || ib.Run == e.Run:
		return bad(line, ReasonBadEvent, "implemented_by.run %q is not another run's id", clipText(ib.Run))
	case !digestRE.MatchString(ib.Head):
		return bad(line, ReasonBadEvent, "implemented_by.head %q is not sha256:<64 hex>", clipText(ib.Head))
	case ib.Length < minImplementationLength || ib.Length > eventlog.MaxEvents:
		return bad(line, ReasonBadEvent, "implemented_by.length %d: an implementation run has at least %d events", ib.Length, minImplementationLength)
	case !objectRE.MatchString(ib.Source.Commit) || !objectRE.MatchString(ib.Source.Tree):
		return bad(line, ReasonBadEvent, "implemented_by.source %q/%q is not a commit and tree", clipText(ib.Source.Commit), clipText(ib.Source.Tree))
	case ib.Contract != e.Contract:
		return bad(line, ReasonContract, "implemented_by.contract %s, the run is bound to %s: implementation and verification share one contract", clipText(ib.Contract), e.Contract)
	}
	return nil
}

// checkImplementingSupersede checks a state.changed IMPLEMENTING →
// SUPERSEDED names its successor. That no session is open (and no action
// unsettled) is the session rules' (leaveImplementing), as for every way
// out of IMPLEMENTING.
func (f *Folder) checkImplementingSupersede(line int, d StateData) error {
	if f.state != Implementing || d.To != Superseded {
		return nil
	}
	if !ValidRunID(d.By) {
		return bad(line, ReasonIllegalTransition, "IMPLEMENTING → SUPERSEDED must name its successor run, not %q", clipText(d.By))
	}
	return nil
}

// ImplementedBy is the replayed run.planned's implemented_by, or nil.
func (f *Folder) ImplementedBy() *ImplementedBy { return f.planned.ImplementedBy }

func clipText(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}
