package approval

import (
	"fmt"

	"github.com/proofgate/proofgate/kernel/approval/codeowners"
)

// Review states the rules read (a code host's words, upper case).
const (
	ReviewApproved         = "APPROVED"
	ReviewChangesRequested = "CHANGES_REQUESTED"
	ReviewDismissed        = "DISMISSED"
)

// Facts are everything approval rules are evaluated on: the pull
// request, its reviews and what the code host answered about the people
// in them. A provider (internal/ci/review) fetches them; EvaluateRules is pure.
type Facts struct {
	Head         string    // the verified head commit
	BaseBranch   string    // the branch the pull request merges into
	Title        string    // pull request title
	Labels       []string  // pull request labels
	Author       Account   // pull request author
	Contributors []Account // authors and committers of its commits
	Files        []ChangedFile
	// Reviews in the order submitted; only the latest APPROVED,
	// CHANGES_REQUESTED or DISMISSED review of each account decides.
	Reviews []RuleReview
	// Roles are the reviewers' repository roles (admin, maintain, write,
	// triage, read, none) by lower-case login; absent = unknown.
	Roles map[string]string
	// Teams are resolved team memberships: "org/slug" (lower case) →
	// lower-case login → active member. A (team, login) pair a rule needs
	// and that is absent refuses the evaluation (*UnresolvedError).
	Teams map[string]map[string]bool
	// CodeOwners is the base branch's CODEOWNERS (nil: none).
	CodeOwners *codeowners.File
	// UpdateMergedFrom are older heads whose approvals carry over to Head
	// under ignore_update_merges: Head is that commit plus only merges of
	// the base branch, proven from the commit graph by the provider.
	UpdateMergedFrom map[string]bool
	// PRCommits are the pull request's commits, for invalidate_on_push:
	// false (an approval of any of them counts).
	PRCommits []string
	// FromAgentSession: the head was produced under a recorded ProofGate
	// agent session (false unless the provider proved it).
	FromAgentSession bool
	// AgentSessionRun is the implementation run of the evidence that
	// proved FromAgentSession (credits of rules that read it name it).
	AgentSessionRun string
}

// ChangedFile is a changed path; Previous is the old path of a rename
// (both paths count as changed).
type ChangedFile struct {
	Path     string
	Previous string
}

// RuleReview is one submitted review.
type RuleReview struct {
	ID       int64
	Reviewer Account
	Bot      bool
	State    string
	Commit   string
}

// Credit says how an approval counted for a rule: via "user" (named in
// requires.users), "team" (an active member of Team), "permission" (a
// role in requires.permissions, or the contract's roles when the rule
// names nobody) or "code_owner" (an owner of Paths in the base branch's
// CODEOWNERS). It is the wire form carried in approval.recorded.
//
// AgentSession, for a rule whose if reads from_agent_session: true, is
// the implementation run whose verified evidence proved the fact.
type Credit struct {
	Rule         string   `json:"rule"`
	Via          string   `json:"via"`
	Team         string   `json:"team,omitempty"`
	Paths        []string `json:"paths,omitempty"`
	AgentSession string   `json:"agent_session,omitempty"`
}

// Ways an approval is credited.
const (
	ViaUser       = "user"
	ViaTeam       = "team"
	ViaPermission = "permission"
	ViaCodeOwner  = "code_owner"
)

// MissReason says why a review did not count for a rule.
type MissReason string

// Why a review did not count for a rule, or why a rule does not apply.
const (
	MissStaleCommit   MissReason = "stale_commit"       // approved another commit
	MissAuthor        MissReason = "pr_author"          // the author, without allow_author
	MissContributor   MissReason = "contributor"        // a commit author, without allow_contributors
	MissBot           MissReason = "bot"                // bots never count
	MissNotQualified  MissReason = "not_qualified"      // not a named user, team member or permitted role
	MissPermission    MissReason = "permission_unknown" // no role known
	MissNotCodeOwner  MissReason = "not_code_owner"     // owns no changed path
	MissNotApplicable MissReason = "not_applicable"     // the rule's if is false
)

// Miss is one review that did not count for a rule.
type Miss struct {
	ReviewID int64      `json:"review_id"`
	Login    string     `json:"login"`
	Reason   MissReason `json:"reason"`
}

// RuleResult is one rule measured against the facts.
type RuleResult struct {
	Name       string `json:"name"`
	Applicable bool   `json:"applicable"`
	// NotApplicable says which condition is false when !Applicable.
	NotApplicable string `json:"not_applicable,omitempty"`
	Satisfied     bool   `json:"satisfied"`
	Approvers     int    `json:"approvers"` // qualified approvers counted
	Need          int    `json:"need"`      // requires.count
	// Unowned are changed paths whose code owners have not approved
	// (requires.code_owners), with who may approve them.
	Unowned    []OwnerWait `json:"unowned,omitempty"`
	Misses     []Miss      `json:"misses,omitempty"`
	MayApprove []string    `json:"may_approve,omitempty"` // who can satisfy what is missing
}

// OwnerWait is a path waiting for one of its code owners.
type OwnerWait struct {
	Path   string   `json:"path"`
	Owners []string `json:"owners"`
}

// Block is a standing change request under approval.disapproval.
type Block struct {
	ReviewID int64  `json:"review_id"`
	Login    string `json:"login"`
	Team     string `json:"team"`
}

// RulesDecision is EvaluateRules' answer.
type RulesDecision struct {
	Mode string `json:"mode"`
	// Applied is false when no rule is applicable: the contract's base
	// requirement (approval.required, roles) alone decides then.
	Applied   bool         `json:"applied"`
	Satisfied bool         `json:"satisfied"` // rules met (or not applied) and nothing blocks
	Rules     []RuleResult `json:"rules"`
	Blocks    []Block      `json:"blocks,omitempty"`
	// Credits are, by review id, how each counted approval satisfied
	// the rules (approvals of rules that are not applicable never count).
	Credits map[int64][]Credit `json:"credits,omitempty"`
	// IfAgentSession is the evaluation as if the head came from an agent
	// session, when from_agent_session is read and not proven: it must be
	// satisfied too (rules_agent.go).
	IfAgentSession *RulesDecision `json:"if_agent_session,omitempty"`
}

// UnresolvedError says a fact a rule needs is missing: a team
// membership that was not resolved. Evaluation fails closed on it.
type UnresolvedError struct {
	Team, Login string
}

func (e *UnresolvedError) Error() string {
	return fmt.Sprintf("membership of %s in team %s was not resolved", e.Login, e.Team)
}
