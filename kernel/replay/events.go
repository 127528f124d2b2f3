package replay

import "github.com/proofgate/proofgate/kernel/runtime"

// Event types written by the kernel (docs/SPEC.md documents each).
const (
	TypePlanned       = "run.planned"
	TypeContext       = "context.attached"
	TypeState         = "state.changed"
	TypeCheckStarted  = "check.started"
	TypeCheckFinished = "check.finished"
	TypeVerification  = "verification.completed"
	TypeApproval      = "approval.recorded"
	TypeLockBroken    = "lock.broken"
	TypeBudget        = "budget.exceeded"
	TypeCheckpoint    = "checkpoint.signed"
	TypeRecovered     = "log.recovered"
)

// PlannedData is the data of run.planned.
type PlannedData struct {
	Contract   ContractRef   `json:"contract"`
	Worktree   WorktreeState `json:"worktree"`
	AllowDirty bool          `json:"allow_dirty"`
	Checks     []string      `json:"checks"`
	Repo       string        `json:"repo,omitempty"`
	Supersedes string        `json:"supersedes,omitempty"`
	Planner    string        `json:"planner"`
	// ImplementedBy names the implementation run whose agent sessions
	// produced the tree this run verifies (ADR 0017); absent otherwise.
	ImplementedBy *ImplementedBy `json:"implemented_by,omitempty"`
}

// WorktreeState is the observed state of the repository's work tree as
// run.planned and state.changed record it: the wire shape of
// internal/source's State, which the writer converts (the replay itself
// reads no repository).
type WorktreeState struct {
	Commit  string   `json:"commit"`
	Tree    string   `json:"tree"`
	Dirty   bool     `json:"dirty"`
	Digest  string   `json:"worktree_digest"`
	Changes []string `json:"changes,omitempty"`
}

// ContractRef says where the frozen contract came from.
type ContractRef struct {
	Hash string `json:"hash"`
	// Origin is "file:<path relative to the repository>" for a contract read
	// from the work tree (then an edit makes the run STALE), or
	// "git:<commit>:<path>" for one read from another commit (the base
	// branch of a pull request).
	Origin  string `json:"origin"`
	Profile string `json:"profile,omitempty"`
}

// ContextData is the data of context.attached.
type ContextData struct {
	Index        int    `json:"index"`
	SnapshotHash string `json:"snapshot_hash"`
	Blob         string `json:"blob"`
	Query        string `json:"query,omitempty"`
}

// StateData is the data of state.changed.
type StateData struct {
	From   State  `json:"from"`
	To     State  `json:"to"`
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
	// By names the run that superseded this one.
	By string `json:"by,omitempty"`
	// Worktree is the observed work-tree digest when moving to STALE.
	Worktree *WorktreeState `json:"worktree,omitempty"`
}

// CheckStartedData is the data of check.started.
type CheckStartedData struct {
	Check string `json:"check"`
	// Caches are the check's cache directories as prepared before the
	// mount (internal/cache): scope, mode, tree digest and provenance.
	Caches []runtime.Cache `json:"caches,omitempty"`
}

// CheckFinishedData is the data of check.finished: a check's evidence.
type CheckFinishedData struct {
	Check       string               `json:"check"`
	Outcome     runtime.Outcome      `json:"outcome"`
	ExitCode    int                  `json:"exit_code"`
	DurationMS  int64                `json:"duration_ms"`
	Started     string               `json:"started,omitempty"`
	Finished    string               `json:"finished,omitempty"`
	Stdout      *runtime.Stream      `json:"stdout,omitempty"`
	Stderr      *runtime.Stream      `json:"stderr,omitempty"`
	Attestation *runtime.Attestation `json:"attestation,omitempty"`
	Detail      string               `json:"detail,omitempty"`
	Structured  *Structured          `json:"structured,omitempty"`
	// Products are the files the passed check produced (contract
	// produces:, ADR 0039), sorted by path; absent otherwise.
	Products []Product `json:"products,omitempty"`
}

// Product is one file a passed check produced, as the harness read it out
// of the check's workspace: its path relative to the repository root, its
// digest (the blob that holds it) and its size.
type Product struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Structured is a check's own report, taken from the last line of its
// stdout that is a JSON object with a string "status" (evidence:
// structured), as check.finished records it.
type Structured struct {
	Status    string     `json:"status"`
	Criteria  []string   `json:"criteria"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// Artifact is a file a check says it produced, with its digest.
type Artifact struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// VerificationData is the data of verification.completed.
type VerificationData struct {
	Digest   string `json:"digest"`
	Passed   bool   `json:"passed"`
	Worktree string `json:"worktree_digest"`
}

// ApprovalData is the data of approval.recorded.
type ApprovalData struct {
	Decision           string        `json:"decision"` // approved | rejected
	Actor              string        `json:"actor"`
	Reason             string        `json:"reason,omitempty"`
	State              State         `json:"state"` // the state the decision moves the run to
	VerificationDigest string        `json:"verification_digest"`
	Source             Source        `json:"source"`
	Contract           string        `json:"contract"`
	GitHub             *GitHubReview `json:"github,omitempty"`
}

// Source is the source binding repeated inside decisions.
type Source struct {
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
}

// LockBrokenData is the data of lock.broken.
type LockBrokenData struct {
	Actor    string `json:"actor"`
	OwnerPID int    `json:"owner_pid"`
	Host     string `json:"owner_host"`
	Created  string `json:"owner_created"`
	// Processes are the checks the dead owner recorded as running (its
	// process records) and what Unlock found when it killed them.
	Processes []ProcessKilled `json:"processes,omitempty"`
	// ProcessError says why a recorded group could not be killed.
	ProcessError string `json:"processes_error,omitempty"`
}

// ProcessKilled is one process record in lock.broken.
type ProcessKilled struct {
	Check  string `json:"check"`
	PGID   int    `json:"pgid,omitempty"`
	Cgroup string `json:"cgroup,omitempty"`
	Result string `json:"result"`       // killed | gone | pid-reused | rebooted | owner-alive | unsupported
	By     string `json:"by,omitempty"` // who killed it first: unlock or gc
	At     string `json:"at,omitempty"` // when (RFC 3339, UTC)
}

// BudgetData is the data of budget.exceeded.
type BudgetData struct {
	MaxDurationMS int64 `json:"max_duration_ms"`
}
