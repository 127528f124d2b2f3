package approval

import (
	"slices"

	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/approval/codeowners"
	"github.com/proofgate/proofgate/kernel/contract"
)

// codeOwners applies requires.code_owners: every changed path (both
// sides of a rename) that the base branch's CODEOWNERS gives owners needs
// an eligible approval, by a reviewer with one of the contract's roles,
// from one of them (the user, or an active member of the team; an e-mail
// owner never matches an account). It returns the credits by review id
// and records the paths still waiting in res.Unowned.
func (ev *ruleEval) codeOwners(r contract.ApprovalRule, res *RuleResult) (map[int64]Credit, error) {
	if !r.Requires.CodeOwners {
		return nil, nil
	}
	credits := map[int64]Credit{}
	for _, p := range ev.f.changedPaths() {
		owners, _ := ev.f.CodeOwners.Owners(p)
		if len(owners) == 0 {
			continue
		}
		id, ok, err := ev.ownerApproval(r, owners)
		if err != nil {
			return nil, err
		}
		if !ok {
			res.Unowned = append(res.Unowned, OwnerWait{Path: p, Owners: ownerNames(owners)})
			continue
		}
		c := credits[id]
		c.Rule, c.Via = r.Name, ViaCodeOwner
		c.Paths = append(c.Paths, p)
		credits[id] = c
	}
	return credits, nil
}

// ownerApproval finds the first eligible approval by one of owners.
func (ev *ruleEval) ownerApproval(r contract.ApprovalRule, owners []codeowners.Owner) (int64, bool, error) {
	for _, rv := range ev.latest {
		if rv.State != ReviewApproved || ev.eligible(r, rv) != "" {
			continue
		}
		login := rv.Reviewer.Login
		if role, ok := ev.f.Roles[lower(login)]; !ok || !slices.Contains(ev.a.Roles, role) {
			continue
		}
		for _, o := range owners {
			switch {
			case o.User != "" && actor.Same(o.User, login):
				return rv.ID, true, nil
			case o.Team != "":
				m, err := ev.member(o.Org+"/"+o.Team, login)
				if err != nil {
					return 0, false, err
				}
				if m {
					return rv.ID, true, nil
				}
			}
		}
	}
	return 0, false, nil
}

func ownerNames(os []codeowners.Owner) []string {
	out := make([]string, 0, len(os))
	for _, o := range os {
		out = append(out, o.String())
	}
	return out
}

// OwnerTeams are the teams ("org/slug") that own the changed paths in the
// base branch's CODEOWNERS: what a provider must resolve memberships of.
func (f Facts) OwnerTeams() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range f.changedPaths() {
		owners, _ := f.CodeOwners.Owners(p)
		for _, o := range owners {
			if t := o.Org + "/" + o.Team; o.Team != "" && !seen[lower(t)] {
				seen[lower(t)] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// TeamsNeeded are the teams whose memberships EvaluateRules may ask for
// with facts f (of the reviewers and the author): the rules' teams and
// author_in_team, the disapproval teams, and the code-owner teams of the
// changed paths when a rule requires code owners.
func TeamsNeeded(a contract.Approval, f Facts) []string {
	seen := map[string]bool{}
	var out []string
	add := func(ts []string) {
		for _, t := range ts {
			if !seen[lower(t)] {
				seen[lower(t)] = true
				out = append(out, t)
			}
		}
	}
	owners := false
	for _, r := range a.Rules {
		add(r.Requires.Teams)
		add(r.If.AuthorInTeam)
		owners = owners || r.Requires.CodeOwners
	}
	if a.Disapproval != nil {
		add(a.Disapproval.Teams)
	}
	if owners {
		add(f.OwnerTeams())
	}
	return out
}
