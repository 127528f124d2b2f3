package approval

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/proofgate/proofgate/internal/pathglob"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/contract"
)

// EvaluateRules measures a's approval rules against the facts. A rule
// whose if is false is not applicable and never counts; with no
// applicable rule the base requirement decides (Applied false). Mode
// "and" needs every applicable rule, "or" one of them. A standing change
// request by a member of a disapproval team blocks. An unresolved team
// membership is an *UnresolvedError: it never passes.
//
// An unproven from_agent_session is unknown, not false (rules_agent.go):
// the decision must then also hold as if it were true.
func EvaluateRules(a contract.Approval, f Facts) (RulesDecision, error) {
	d, err := evaluateRules(a, f)
	if err != nil || f.FromAgentSession || !UsesAgentSession(a) {
		return d, err
	}
	return d, bothWorlds(&d, a, f)
}

// evaluateRules is EvaluateRules on the facts as they are.
func evaluateRules(a contract.Approval, f Facts) (RulesDecision, error) {
	d := RulesDecision{Mode: a.Mode, Credits: map[int64][]Credit{}}
	if d.Mode == "" {
		d.Mode = contract.ModeAnd
	}
	ev := &ruleEval{a: a, f: f, latest: latestDecisive(f.Reviews)}
	anyOK, allOK := false, true
	for _, r := range a.Rules {
		res, err := ev.rule(r, d.Credits)
		if err != nil {
			return d, err
		}
		d.Rules = append(d.Rules, res)
		if res.Applicable {
			d.Applied = true
			anyOK = anyOK || res.Satisfied
			allOK = allOK && res.Satisfied
		}
	}
	blocks, err := ev.disapprovals()
	if err != nil {
		return d, err
	}
	d.Blocks = blocks
	met := !d.Applied || (d.Mode == contract.ModeOr && anyOK) || (d.Mode != contract.ModeOr && allOK)
	d.Satisfied = met && len(blocks) == 0
	if len(d.Credits) == 0 {
		d.Credits = nil
	}
	return d, nil
}

type ruleEval struct {
	a      contract.Approval
	f      Facts
	latest []RuleReview
}

// latestDecisive is each account's latest decisive review, in the order
// the accounts first reviewed.
func latestDecisive(rs []RuleReview) []RuleReview {
	at := map[string]int{}
	var out []RuleReview
	for _, r := range rs {
		st := strings.ToUpper(r.State)
		if st != ReviewApproved && st != ReviewChangesRequested && st != ReviewDismissed {
			continue
		}
		r.State = st
		k := accountKey(r.Reviewer)
		if i, ok := at[k]; ok {
			out[i] = r
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	return out
}

func accountKey(a Account) string {
	if a.Subject != "" {
		return "id:" + a.Subject
	}
	return "login:" + strings.ToLower(a.Login)
}

func lower(s string) string { return strings.ToLower(s) }

// member reports whether login is an active member of team, refusing an
// unresolved pair.
func (ev *ruleEval) member(team, login string) (bool, error) {
	m, ok := ev.f.Teams[lower(team)][lower(login)]
	if !ok {
		return false, &UnresolvedError{Team: team, Login: login}
	}
	return m, nil
}

// applies evaluates the rule's if; why names the first false condition.
func (ev *ruleEval) applies(c contract.RuleIf) (ok bool, why string, err error) {
	f := ev.f
	if cf := c.ChangedFiles; cf != nil && !ev.filesMatch(cf) {
		return false, "no changed file matches changed_files", nil
	}
	if len(c.BaseBranch) > 0 && !slices.Contains(c.BaseBranch, f.BaseBranch) {
		return false, fmt.Sprintf("base branch %q is not one of %v", f.BaseBranch, c.BaseBranch), nil
	}
	if len(c.AuthorIs) > 0 && !slices.ContainsFunc(c.AuthorIs, func(u string) bool { return actor.Same(u, f.Author.Login) }) {
		return false, "the author is not one of author_is", nil
	}
	if len(c.AuthorInTeam) > 0 {
		in := false
		for _, t := range c.AuthorInTeam {
			m, err := ev.member(t, f.Author.Login)
			if err != nil {
				return false, "", err
			}
			in = in || m
		}
		if !in {
			return false, "the author is in none of author_in_team", nil
		}
	}
	for _, l := range c.Labels {
		if !slices.Contains(f.Labels, l) {
			return false, fmt.Sprintf("label %q is not set", l), nil
		}
	}
	if c.TitleMatches != "" {
		re, err := regexp.Compile(c.TitleMatches)
		if err != nil || !re.MatchString(f.Title) {
			return false, "the title does not match title_matches", nil
		}
	}
	if c.FromAgentSession != nil && *c.FromAgentSession != f.FromAgentSession {
		return false, fmt.Sprintf("from_agent_session is %v", f.FromAgentSession), nil
	}
	return true, "", nil
}

// changedPaths are every changed path, both sides of a rename, sorted.
func (f Facts) changedPaths() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range f.Files {
		for _, p := range []string{c.Path, c.Previous} {
			if p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (ev *ruleEval) filesMatch(cf *contract.ChangedFiles) bool {
	for _, p := range ev.f.changedPaths() {
		if anyGlob(cf.Paths, p) && !anyGlob(cf.Ignore, p) {
			return true
		}
	}
	return false
}

func anyGlob(globs []string, p string) bool {
	return slices.ContainsFunc(globs, func(g string) bool { return pathglob.Match(g, p) })
}
