package approval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/contract"
)

// rule measures one rule, adding the credits it grants to credits.
func (ev *ruleEval) rule(r contract.ApprovalRule, credits map[int64][]Credit) (RuleResult, error) {
	res := RuleResult{Name: r.Name, Need: r.Requires.Count}
	ok, why, err := ev.applies(r.If)
	if err != nil {
		return res, err
	}
	if !ok {
		res.NotApplicable = why
		return res, nil
	}
	res.Applicable = true
	var pending []Credit
	var pendingIDs []int64
	q := r.Requires
	ownersOnly := q.CodeOwners && len(q.Users) == 0 && len(q.Teams) == 0 && len(q.Permissions) == 0
	for _, rv := range ev.latest {
		if rv.State != ReviewApproved {
			continue
		}
		if miss := ev.eligible(r, rv); miss != "" {
			res.Misses = append(res.Misses, Miss{rv.ID, rv.Reviewer.Login, miss})
			continue
		}
		if ownersOnly { // only code owners count (below)
			continue
		}
		c, miss, err := ev.qualifies(r, rv)
		if err != nil {
			return res, err
		}
		if miss != "" {
			if !r.Requires.CodeOwners {
				res.Misses = append(res.Misses, Miss{rv.ID, rv.Reviewer.Login, miss})
			}
			continue
		}
		res.Approvers++
		pending, pendingIDs = append(pending, c), append(pendingIDs, rv.ID)
	}
	owners, err := ev.codeOwners(r, &res)
	if err != nil {
		return res, err
	}
	if ownersOnly {
		res.Approvers = len(owners)
	}
	res.Satisfied = res.Approvers >= res.Need && len(res.Unowned) == 0
	if !res.Satisfied {
		res.MayApprove = ev.mayApprove(r, res)
		return res, nil
	}
	for i, c := range pending {
		credits[pendingIDs[i]] = append(credits[pendingIDs[i]], ev.stamp(r, c))
	}
	for id, c := range owners {
		credits[id] = append(credits[id], ev.stamp(r, c))
	}
	return res, nil
}

// eligible says why an approval cannot count for r at all, or "".
func (ev *ruleEval) eligible(r contract.ApprovalRule, rv RuleReview) MissReason {
	f := ev.f
	switch {
	case rv.Bot:
		return MissBot
	case !ev.commitCounts(r, rv.Commit):
		return MissStaleCommit
	case !r.Options.AllowAuthor && rv.Reviewer.Same(f.Author):
		return MissAuthor
	case !r.Options.AllowContributors && !ev.a.AllowCommitAuthors &&
		slices.ContainsFunc(f.Contributors, rv.Reviewer.Same):
		return MissContributor
	}
	return ""
}

// commitCounts reports whether an approval of commit binds to the head
// under r's options: the head itself; an older head that Head only adds
// proven update merges to (ignore_update_merges); any commit of the pull
// request when invalidate_on_push is false. Never by time.
func (ev *ruleEval) commitCounts(r contract.ApprovalRule, commit string) bool {
	f := ev.f
	switch {
	case commit == "":
		return false
	case commit == f.Head:
		return true
	case r.Options.IgnoreUpdateMerges && f.UpdateMergedFrom[commit]:
		return true
	case !r.Options.InvalidateOnPush && slices.Contains(f.PRCommits, commit):
		return true
	}
	return false
}

// qualifies credits an eligible approval under requires.users, teams and
// permissions (any of them), or the contract's roles when none is named.
func (ev *ruleEval) qualifies(r contract.ApprovalRule, rv RuleReview) (Credit, MissReason, error) {
	q := r.Requires
	login := rv.Reviewer.Login
	c := Credit{Rule: r.Name}
	if slices.ContainsFunc(q.Users, func(u string) bool { return actor.Same(u, login) }) {
		c.Via = ViaUser
		return c, "", nil
	}
	for _, t := range q.Teams {
		m, err := ev.member(t, login)
		if err != nil {
			return c, "", err
		}
		if m {
			c.Via, c.Team = ViaTeam, t
			return c, "", nil
		}
	}
	perms := q.Permissions
	if len(q.Users) == 0 && len(q.Teams) == 0 && len(perms) == 0 {
		perms = ev.a.Roles
	}
	role, known := ev.f.Roles[lower(login)]
	if len(perms) > 0 && known && slices.Contains(perms, role) {
		c.Via = ViaPermission
		return c, "", nil
	}
	if len(perms) > 0 && !known {
		return c, MissPermission, nil
	}
	return c, MissNotQualified, nil
}

// disapprovals are the standing change requests of disapproval teams'
// members (a dismissed review no longer stands).
func (ev *ruleEval) disapprovals() ([]Block, error) {
	if ev.a.Disapproval == nil {
		return nil, nil
	}
	var out []Block
	for _, rv := range ev.latest {
		if rv.State != ReviewChangesRequested || rv.Bot {
			continue
		}
		for _, t := range ev.a.Disapproval.Teams {
			m, err := ev.member(t, rv.Reviewer.Login)
			if err != nil {
				return nil, err
			}
			if m {
				out = append(out, Block{ReviewID: rv.ID, Login: rv.Reviewer.Login, Team: t})
				break
			}
		}
	}
	return out, nil
}

// mayApprove says who can satisfy what r still lacks.
func (ev *ruleEval) mayApprove(r contract.ApprovalRule, res RuleResult) []string {
	var who []string
	q := r.Requires
	ownersOnly := q.CodeOwners && len(q.Users) == 0 && len(q.Teams) == 0 && len(q.Permissions) == 0
	if res.Approvers < res.Need && !ownersOnly {
		for _, u := range q.Users {
			who = append(who, "@"+u)
		}
		for _, t := range q.Teams {
			who = append(who, "@"+t)
		}
		perms := q.Permissions
		if len(q.Users) == 0 && len(q.Teams) == 0 && len(perms) == 0 {
			perms = ev.a.Roles
		}
		if len(perms) > 0 {
			who = append(who, "role "+strings.Join(perms, "/"))
		}
	}
	for _, u := range res.Unowned {
		for _, o := range u.Owners {
			if !slices.Contains(who, o) {
				who = append(who, o)
			}
		}
	}
	return who
}

// Pending is the text of what the rules still wait for, for a status:
// "waiting for: backend (1 of 2; @acme/backend), owners (code owners of
// src/a.go: @alice)"; "" when nothing waits.
func (d RulesDecision) Pending() string {
	var parts []string
	for _, r := range d.Rules {
		if !r.Applicable || r.Satisfied {
			continue
		}
		var what []string
		if r.Approvers < r.Need {
			what = append(what, fmt.Sprintf("%d of %d", r.Approvers, r.Need))
		}
		for _, u := range r.Unowned {
			what = append(what, "code owners of "+u.Path)
		}
		parts = append(parts, fmt.Sprintf("%s (%s; %s)", r.Name, strings.Join(what, ", "), strings.Join(r.MayApprove, ", ")))
	}
	for _, b := range d.Blocks {
		parts = append(parts, fmt.Sprintf("changes requested by %s (%s) to be approved or dismissed", b.Login, b.Team))
	}
	if alt := d.IfAgentSession; alt != nil && !alt.Satisfied {
		if p := strings.TrimPrefix(alt.Pending(), "waiting for: "); p != "" && !slices.Contains(parts, p) {
			parts = append(parts, p+" (from_agent_session is not proven, so the rules must hold as if it were true)")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "waiting for: " + strings.Join(parts, ", ")
}
