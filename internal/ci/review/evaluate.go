// Package review decides whether a pull request is approved from its GitHub
// review state, binding every counted approval to the exact verified head
// commit. Evaluate is a pure function of the facts; Fetch reads the facts
// from the API; Decide does both and refuses if the head moved meanwhile.
//
// When the contract has approval rules (docs/SPEC.md §1 "Approval
// rules"), Decide also reads, through FetchRuleFacts: the pull request's
// files (GET pulls/{n}/files, paginated, previous_filename for renames),
// CODEOWNERS at the base commit (contents API, GitHub's three locations),
// the membership of the author and every decisive reviewer in every team
// the rules need (GET orgs/{org}/teams/{slug}, then
// .../memberships/{user}: state active only; a missing team or a failed
// lookup is a *TeamError, failing closed), and for ignore_update_merges
// the commit comparisons that prove an older approved head only gained
// update merges (rules_merges.go). kernel/approval.EvaluateRules then
// decides; its credits travel with each counted Approval into
// approval.recorded (github.rules).
package review

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/contract"
)

// Review states as the REST API spells them.
const (
	StateApproved         = "APPROVED"
	StateChangesRequested = "CHANGES_REQUESTED"
	StateCommented        = "COMMENTED"
	StateDismissed        = "DISMISSED"
	StatePending          = "PENDING"
)

// User is a GitHub account. ID is the immutable numeric id.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type,omitempty"` // "User" | "Bot" | "Organization"
}

// IsBot reports whether u is a bot account.
func (u User) IsBot() bool {
	return strings.EqualFold(u.Type, "Bot") || strings.HasSuffix(strings.ToLower(u.Login), "[bot]")
}

// account is u as a provider-neutral account; an unknown id (0) is no
// subject.
func (u User) account() approval.Account {
	a := approval.Account{Provider: approval.ProviderGitHub, Login: u.Login}
	if u.ID != 0 {
		a.Subject = strconv.FormatInt(u.ID, 10)
	}
	return a
}

// same reports whether u and o are one account: by id when both have one,
// else by login.
func (u User) same(o User) bool { return u.account().Same(o.account()) }

// Review is one submitted pull-request review.
type Review struct {
	ID          int64     `json:"id"`
	User        User      `json:"user"`
	State       string    `json:"state"` // upper case, as in REST
	CommitID    string    `json:"commit_id"`
	SubmittedAt time.Time `json:"submitted_at"`
}

// Permission is a collaborator's permission on the repository.
type Permission struct {
	Permission string `json:"permission"`          // admin | write | read | none
	RoleName   string `json:"role_name,omitempty"` // admin | maintain | write | triage | read | custom
}

// Role maps a permission answer onto the contract's role vocabulary (admin,
// maintain, write, triage, read, none). A custom role name falls back to its
// base permission.
func (p Permission) Role() string {
	switch r := strings.ToLower(p.RoleName); r {
	case "admin", "maintain", "write", "triage", "read":
		return r
	}
	switch r := strings.ToLower(p.Permission); r {
	case "admin", "write", "read":
		return r
	}
	return "none"
}

// Input is everything the decision depends on.
type Input struct {
	Head        string               // the verified PR head commit
	Author      User                 // the PR author
	CommitUsers []User               // authors and committers of the PR's commits
	Reviews     []Review             // all submitted reviews
	Permissions map[int64]Permission // by reviewer user id
	Rule        contract.Approval
	// RuleFacts are what approval rules read (rules.go); FetchRuleFacts
	// fills them when the contract has rules.
	RuleFacts    RuleFacts
	changedFiles int // the PR's changed_files count, to check the listing
}

// Approval is one counted approval.
type Approval struct {
	Login       string    `json:"login"`
	UserID      int64     `json:"user_id"`
	ReviewID    int64     `json:"review_id"`
	SubmittedAt time.Time `json:"submitted_at"`
	Commit      string    `json:"commit"`
	Permission  string    `json:"permission"` // the role that qualified it
	// Rules are how the approval satisfied the contract's approval rules
	// (absent without rules, or when no rule applies).
	Rules []approval.Credit `json:"rules,omitempty"`
}

// Reason says why a review did not count.
type Reason string

// Reasons a review does not count.
const (
	ReasonNoUser       Reason = "no_user"
	ReasonNotDecisive  Reason = "not_decisive"
	ReasonSuperseded   Reason = "superseded"
	ReasonDismissed    Reason = "dismissed"
	ReasonChanges      Reason = "changes_requested"
	ReasonStaleCommit  Reason = "stale_commit"
	ReasonPRAuthor     Reason = "pr_author"
	ReasonCommitAuthor Reason = "commit_author"
	ReasonBot          Reason = "bot"
	ReasonPermission   Reason = "permission"
	ReasonNoPermission Reason = "permission_unknown"
	ReasonUnknownState Reason = "unknown_state"
	// ReasonNotCredited: approval rules apply and none credited the review.
	ReasonNotCredited Reason = "not_credited"
)

// Ignored is a review that did not count, and why.
type Ignored struct {
	Login    string `json:"login"`
	UserID   int64  `json:"user_id"`
	ReviewID int64  `json:"review_id"`
	State    string `json:"state"`
	Commit   string `json:"commit"`
	Reason   Reason `json:"reason"`
	Why      string `json:"why"`
}

// Blocker is a standing change request from a qualified reviewer.
type Blocker struct {
	Login       string    `json:"login"`
	UserID      int64     `json:"user_id"`
	ReviewID    int64     `json:"review_id"`
	Commit      string    `json:"commit"`
	SubmittedAt time.Time `json:"submitted_at"`
	Permission  string    `json:"permission"`
}

// Decision is the outcome of Evaluate.
type Decision struct {
	Head      string     `json:"head"`
	Required  int        `json:"required"`
	Counted   []Approval `json:"counted"`
	Ignored   []Ignored  `json:"ignored"`
	Blocking  []Blocker  `json:"blocking"`
	Satisfied bool       `json:"satisfied"`
	Missing   int        `json:"missing"`
	Summary   string     `json:"summary"`
	// Rules is the approval-rule evaluation (nil without rules);
	// RulesError says why it was refused (fail closed).
	Rules      *approval.RulesDecision `json:"rules,omitempty"`
	RulesError string                  `json:"rules_error,omitempty"`
	// NotKept are older approved commits whose approvals were not kept
	// under ignore_update_merges, and why.
	NotKept map[string]string `json:"not_kept,omitempty"`
	// AgentSession is the from_agent_session fact the rules read, and
	// why it is false (nil when no rule reads it).
	AgentSession *AgentSession `json:"agent_session,omitempty"`
}

func decisive(state string) bool {
	return state == StateApproved || state == StateChangesRequested || state == StateDismissed
}

// Evaluate applies the approval rule to the review state. It never reports
// Satisfied without Required distinct qualified approvals of exactly Head and
// no standing change request from a qualified reviewer.
func Evaluate(in Input) Decision {
	e := &evaluation{in: in, d: Decision{Head: in.Head, Required: in.Rule.Required}, roles: map[string]bool{}}
	for _, r := range in.Rule.Roles {
		e.roles[strings.ToLower(r)] = true
	}
	latest, order := e.latestDecisive()
	for _, id := range order {
		r := latest[id]
		switch r.State {
		case StateDismissed:
			e.ignore(r, ReasonDismissed, "the review was dismissed")
		case StateChangesRequested:
			e.changeRequest(r)
		default: // APPROVED
			e.approval(r)
		}
	}
	// Every counted approval and every blocker is a distinct account (the
	// latest decisive review of one user id), so their numbers are the
	// count and the standing rejection the requirement measures.
	d := &e.d
	v := approval.Requirement{Required: in.Rule.Required}.Verdict(len(d.Counted), len(d.Blocking) > 0)
	d.Missing = v.Missing()
	d.Satisfied = in.Head != "" && in.Rule.Required >= 0 && v.Decision == approval.Approved
	d.Summary = summary(*d, in.Rule)
	if hasRules(in) {
		applyRules(d, in)
	}
	return *d
}

// evaluation is one Evaluate in progress.
type evaluation struct {
	in    Input
	d     Decision
	roles map[string]bool // the rule's roles, lower case
}

func (e *evaluation) ignore(r Review, reason Reason, why string) {
	e.d.Ignored = append(e.d.Ignored, Ignored{Login: r.User.Login, UserID: r.User.ID, ReviewID: r.ID,
		State: r.State, Commit: r.CommitID, Reason: reason, Why: why})
}

// latestDecisive returns each reviewer's latest decisive review, by
// numeric user id, in the order the reviewers first reviewed; every other
// review is ignored with its reason.
func (e *evaluation) latestDecisive() (map[int64]Review, []int64) {
	reviews := slices.Clone(e.in.Reviews)
	// Chronological; the API already is, but do not depend on it.
	sort.SliceStable(reviews, func(i, j int) bool {
		a, b := reviews[i], reviews[j]
		if !a.SubmittedAt.Equal(b.SubmittedAt) {
			return a.SubmittedAt.Before(b.SubmittedAt)
		}
		return a.ID < b.ID
	})
	latest := map[int64]Review{}
	var order []int64
	for _, r := range reviews {
		r.State = strings.ToUpper(r.State)
		switch {
		case r.User.ID == 0:
			e.ignore(r, ReasonNoUser, "review has no user id (deleted account?)")
			continue
		case r.State == StateCommented || r.State == StatePending:
			e.ignore(r, ReasonNotDecisive, "a "+strings.ToLower(r.State)+" review does not change a decision")
			continue
		case !decisive(r.State):
			e.ignore(r, ReasonUnknownState, fmt.Sprintf("unknown review state %q", r.State))
			continue
		}
		if prev, ok := latest[r.User.ID]; ok {
			e.ignore(prev, ReasonSuperseded, fmt.Sprintf("superseded by review %d", r.ID))
		} else {
			order = append(order, r.User.ID)
		}
		latest[r.User.ID] = r
	}
	return latest, order
}

// changeRequest records a standing CHANGES_REQUESTED as blocking unless it
// comes from someone who could never approve: a bot or a user whose role is
// outside the rule. An unknown permission blocks (fail closed).
func (e *evaluation) changeRequest(r Review) {
	perm, havePerm := e.in.Permissions[r.User.ID]
	role := perm.Role()
	if r.User.IsBot() {
		e.ignore(r, ReasonBot, "change request from a bot does not block")
		return
	}
	if havePerm && !e.roles[role] {
		e.ignore(r, ReasonPermission, fmt.Sprintf("change request from role %q outside %v does not block", role, e.in.Rule.Roles))
		return
	}
	if !havePerm {
		role = "unknown"
	}
	e.d.Blocking = append(e.d.Blocking, Blocker{Login: r.User.Login, UserID: r.User.ID, ReviewID: r.ID,
		Commit: r.CommitID, SubmittedAt: r.SubmittedAt, Permission: role})
}

// approval counts an APPROVED review of exactly the head by an eligible
// reviewer, and ignores any other with the reason.
func (e *evaluation) approval(r Review) {
	in := e.in
	perm, havePerm := in.Permissions[r.User.ID]
	role := perm.Role()
	switch {
	case in.Head == "" || r.CommitID != in.Head:
		e.ignore(r, ReasonStaleCommit, fmt.Sprintf("approved commit %s, not the verified head %s", short(r.CommitID), short(in.Head)))
	case r.User.IsBot():
		e.ignore(r, ReasonBot, "bots never count")
	case r.User.same(in.Author):
		e.ignore(r, ReasonPRAuthor, "the PR author cannot approve their own PR")
	case !in.Rule.AllowCommitAuthors && e.isCommitUser(r.User):
		e.ignore(r, ReasonCommitAuthor, "authored or committed a commit in the PR")
	case !havePerm:
		e.ignore(r, ReasonNoPermission, "reviewer permission unknown")
	case !e.roles[role]:
		e.ignore(r, ReasonPermission, fmt.Sprintf("role %q is not one of %v", role, in.Rule.Roles))
	default:
		e.d.Counted = append(e.d.Counted, Approval{Login: r.User.Login, UserID: r.User.ID, ReviewID: r.ID,
			SubmittedAt: r.SubmittedAt, Commit: r.CommitID, Permission: role})
	}
}

func (e *evaluation) isCommitUser(u User) bool {
	for _, c := range e.in.CommitUsers {
		if c.same(u) {
			return true
		}
	}
	return false
}

func short(sha string) string {
	if sha == "" {
		return "(none)"
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func summary(d Decision, rule contract.Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d required approvals on %s", len(d.Counted), rule.Required, short(d.Head))
	if d.Satisfied {
		b.WriteString(": approved")
		return b.String()
	}
	if d.Missing > 0 {
		who := "users with role " + strings.Join(rule.Roles, ", ") + " who are not the PR author"
		if !rule.AllowCommitAuthors {
			who += " or a commit author"
		}
		fmt.Fprintf(&b, "; missing %d approval(s) of commit %s from %s", d.Missing, short(d.Head), who)
	}
	for _, bl := range d.Blocking {
		fmt.Fprintf(&b, "; blocked by changes requested by %s (review %d)", bl.Login, bl.ReviewID)
	}
	return b.String()
}
