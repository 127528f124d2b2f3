package run

import (
	"io/fs"

	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// The replay, the report types, the lifecycle and the event types live in
// kernel/replay (the verification side: no lock, no git, no runtime
// provider). These aliases keep kernel/run's callers (cmd/, ci/) compiling
// unchanged; new code may import kernel/replay directly.

// Report types and the lifecycle.
type (
	State           = replay.State
	Report          = replay.Report
	CheckReport     = replay.CheckReport
	Decision        = replay.Decision
	GitHubReview    = replay.GitHubReview
	Worktree        = replay.Worktree
	TransitionError = replay.TransitionError
	AuditError      = replay.AuditError
	AuditReason     = replay.AuditReason
	AuditOption     = replay.AuditOption
)

// Event data types.
type (
	PlannedData       = replay.PlannedData
	ContractRef       = replay.ContractRef
	ContextData       = replay.ContextData
	StateData         = replay.StateData
	CheckStartedData  = replay.CheckStartedData
	CheckFinishedData = replay.CheckFinishedData
	Structured        = replay.Structured
	Artifact          = replay.Artifact
	VerificationData  = replay.VerificationData
	ApprovalData      = replay.ApprovalData
	Source            = replay.Source
	LockBrokenData    = replay.LockBrokenData
	ProcessKilled     = replay.ProcessKilled
	BudgetData        = replay.BudgetData
)

// Lifecycle states.
const (
	Planned          = replay.Planned
	Implementing     = replay.Implementing
	Verifying        = replay.Verifying
	AwaitingApproval = replay.AwaitingApproval
	Complete         = replay.Complete
	Blocked          = replay.Blocked
	Rejected         = replay.Rejected
	Stale            = replay.Stale
	Cancelled        = replay.Cancelled
	Superseded       = replay.Superseded
)

// Event types.
const (
	TypePlanned       = replay.TypePlanned
	TypeContext       = replay.TypeContext
	TypeState         = replay.TypeState
	TypeCheckStarted  = replay.TypeCheckStarted
	TypeCheckFinished = replay.TypeCheckFinished
	TypeVerification  = replay.TypeVerification
	TypeApproval      = replay.TypeApproval
	TypeLockBroken    = replay.TypeLockBroken
	TypeBudget        = replay.TypeBudget
	TypeCheckpoint    = replay.TypeCheckpoint
	TypeRecovered     = replay.TypeRecovered
)

// Audit reasons.
const (
	ReasonChain             = replay.ReasonChain
	ReasonContract          = replay.ReasonContract
	ReasonIllegalTransition = replay.ReasonIllegalTransition
	ReasonUnknownEvent      = replay.ReasonUnknownEvent
	ReasonBadEvent          = replay.ReasonBadEvent
	ReasonDigest            = replay.ReasonDigest
	ReasonDecision          = replay.ReasonDecision
	ReasonProjection        = replay.ReasonProjection
	ReasonBlob              = replay.ReasonBlob
	ReasonMissing           = replay.ReasonMissing
	ReasonProjectionLag     = replay.ReasonProjectionLag
)

// AuditFS is replay.AuditFS.
func AuditFS(fsys fs.FS, opts ...AuditOption) (*Report, error) { return replay.AuditFS(fsys, opts...) }

// Audit is replay.Audit.
// An archived run is audited from its verified archive (ReadDir).
func Audit(dir string) (*Report, error) {
	rd, _, done, err := readable(dir)
	if err != nil {
		return nil, err
	}
	defer done()
	return replay.Audit(rd)
}

// BlobsVerified is replay.BlobsVerified.
func BlobsVerified() AuditOption { return replay.BlobsVerified() }

// Fold is replay.Fold.
func Fold(c *contract.Resolved, events []eventlog.Event) (*Report, error) {
	return replay.Fold(c, events)
}

// VerificationDigest is replay.VerificationDigest.
func VerificationDigest(r *Report) (string, error) { return replay.VerificationDigest(r) }

// CanTransition is replay.CanTransition.
func CanTransition(from, to State) bool { return replay.CanTransition(from, to) }

func isReason(err error, reason AuditReason) bool { return replay.IsReason(err, reason) }
