package replay

import (
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// State is a run's lifecycle state.
type State string

// Lifecycle states.
const (
	Planned          State = "PLANNED"
	Implementing     State = "IMPLEMENTING"
	Verifying        State = "VERIFYING"
	AwaitingApproval State = "AWAITING_APPROVAL"
	Complete         State = "COMPLETE"
	Blocked          State = "BLOCKED"
	Rejected         State = "REJECTED"
	Stale            State = "STALE"
	Cancelled        State = "CANCELLED"
	Superseded       State = "SUPERSEDED"
)

// Report is a run as reconstructed from its event log and checked against
// its projection (run.json) and frozen contract: what status, audit and the
// bundle exporter and verifier report.
type Report struct {
	RunID   string          `json:"run_id"`
	State   State           `json:"state"`
	Source  eventlog.Source `json:"source"`
	Repo    string          `json:"repo,omitempty"`
	Profile string          `json:"profile,omitempty"`
	// Worktree is the work tree the run was planned on: clean, or dirty
	// (planned with --allow-dirty, so its checks ran on content that no
	// commit names), with its digest. Absent only in run.json files
	// written before it was added (ADR 0005).
	Worktree *Worktree `json:"worktree,omitempty"`
	// ImplementedBy is run.planned's implemented_by: the implementation
	// run whose sessions produced the tree this run verifies (ADR 0017).
	ImplementedBy      *ImplementedBy `json:"implemented_by,omitempty"`
	ContractHash       string         `json:"contract_hash"`
	VerificationDigest string         `json:"verification_digest,omitempty"`
	ChainHead          string         `json:"chain_head"`
	ChainLength        int            `json:"chain_length"`
	Checks             []CheckReport  `json:"checks"`
	Decisions          []Decision     `json:"decisions,omitempty"`
	// Authorizations are the tracking authorizations recorded
	// (authorization.go), oldest first; absent when none.
	Authorizations []Authorization `json:"authorizations,omitempty"`
	// LastEventTime is the time of the log's last event (RFC 3339). It is
	// not part of the projection.
	LastEventTime string `json:"-"`
	// Pending lists checks that started and have not finished: running, or
	// interrupted when the writer died.
	Pending []string `json:"pending,omitempty"`
	// Blobs lists every blob digest the log references (check streams,
	// context snapshots), each present and intact in the run directory.
	Blobs []string `json:"blobs,omitempty"`
	// Sessions are the agent sessions recorded while the run was
	// IMPLEMENTING, oldest first.
	Sessions []SessionView `json:"sessions,omitempty"`
}

// Worktree is the state of the work tree a run was planned on.
type Worktree struct {
	Dirty  bool   `json:"dirty"`
	Digest string `json:"worktree_digest"`
}

// CheckReport is one check's last recorded result.
type CheckReport struct {
	ID          string               `json:"id"`
	Outcome     runtime.Outcome      `json:"outcome"`
	ExitCode    int                  `json:"exit_code"`
	DurationMS  int64                `json:"duration_ms"`
	Stdout      *runtime.Stream      `json:"stdout,omitempty"`
	Stderr      *runtime.Stream      `json:"stderr,omitempty"`
	Attestation *runtime.Attestation `json:"attestation,omitempty"`
	Detail      string               `json:"detail,omitempty"`
	// Products are the files the passed check produced (ADR 0039).
	Products []Product `json:"products,omitempty"`
}

// Decision is a recorded human decision.
type Decision struct {
	Decision string        `json:"decision"` // approved | rejected
	Actor    string        `json:"actor"`
	Time     string        `json:"time"`
	Reason   string        `json:"reason,omitempty"`
	GitHub   *GitHubReview `json:"github,omitempty"`
}

// GitHubReview identifies the pull-request review a decision came from.
type GitHubReview struct {
	Login       string `json:"login"`
	UserID      int64  `json:"user_id"`
	ReviewID    int64  `json:"review_id"`
	Commit      string `json:"commit"`
	Tree        string `json:"tree,omitempty"`
	Permission  string `json:"permission"`
	SubmittedAt string `json:"submitted_at,omitempty"`
	PullRequest int    `json:"pull_request,omitempty"`
	// Rules are how the approval satisfied the contract's approval rules
	// (docs/SPEC.md §1 Approval rules): absent without rules.
	Rules []approval.Credit `json:"rules,omitempty"`
}

// Identity is who decision d speaks for.
func (d Decision) Identity() approval.Identity { return d.GitHub.Identity(d.Actor) }

// Identity is who a decision recorded as actor from review g speaks for;
// g is nil for a local decision.
func (g *GitHubReview) Identity(actor string) approval.Identity {
	if g == nil {
		return approval.Local(actor)
	}
	return approval.GitHub(actor, g.Login, g.UserID)
}
