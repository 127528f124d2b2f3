package bench

import "fmt"

// Reason is the typed cause of a refused benchmark operation.
type Reason string

// Reasons.
const (
	ReasonManifestMissing Reason = "manifest-missing"
	ReasonManifestInvalid Reason = "manifest-invalid"
	ReasonManifestIO      Reason = "manifest-io"
	ReasonManifestChanged Reason = "manifest-changed"
	ReasonUnknownTask     Reason = "unknown-task"
	ReasonDuplicate       Reason = "baseline-exists"
	ReasonCriterion       Reason = "unknown-criterion"
	ReasonBadBaseline     Reason = "bad-baseline"
	ReasonEvidence        Reason = "evidence-unreadable"
)

// Error is a refused manifest or baseline write.
type Error struct {
	File   string
	Task   string
	Reason Reason
	Detail string
	Err    error
}

func (e *Error) Error() string {
	if e.Task != "" {
		return fmt.Sprintf("benchmark manifest %s: task %s: %s: %s", e.File, e.Task, e.Reason, e.Detail)
	}
	return fmt.Sprintf("benchmark manifest %s: %s: %s", e.File, e.Reason, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }
