package contract

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/internal/pathglob"
)

// Approval rule modes (approval.mode).
const (
	ModeAnd = "and"
	ModeOr  = "or"
)

// ApprovalRule is one named approval rule (approval.rules[]; docs/SPEC.md
// §1 "Approval rules"). Evaluation lives in kernel/approval.
type ApprovalRule struct {
	Name     string       `json:"name"`
	If       RuleIf       `json:"if"`
	Requires RuleRequires `json:"requires"`
	Options  RuleOptions  `json:"options"`
}

// RuleIf are the conditions under which a rule applies; all given ones
// must hold, and a rule with none always applies.
type RuleIf struct {
	ChangedFiles     *ChangedFiles `json:"changed_files,omitempty"`
	BaseBranch       []string      `json:"base_branch,omitempty"`
	AuthorIs         []string      `json:"author_is,omitempty"`
	AuthorInTeam     []string      `json:"author_in_team,omitempty"` // "org/slug"
	Labels           []string      `json:"labels,omitempty"`
	TitleMatches     string        `json:"title_matches,omitempty"` // RE2
	FromAgentSession *bool         `json:"from_agent_session,omitempty"`
}

// ChangedFiles holds when a changed path (either side of a rename)
// matches a glob of Paths and none of Ignore.
type ChangedFiles struct {
	Paths  []string `json:"paths"`
	Ignore []string `json:"ignore,omitempty"`
}

// RuleRequires is what satisfies a rule.
type RuleRequires struct {
	Count       int      `json:"count"`
	Users       []string `json:"users,omitempty"`
	Teams       []string `json:"teams,omitempty"` // "org/slug"
	Permissions []string `json:"permissions,omitempty"`
	CodeOwners  bool     `json:"code_owners,omitempty"`
}

// RuleOptions tune who and what counts.
type RuleOptions struct {
	AllowAuthor        bool `json:"allow_author"`
	AllowContributors  bool `json:"allow_contributors"`
	InvalidateOnPush   bool `json:"invalidate_on_push"`
	IgnoreUpdateMerges bool `json:"ignore_update_merges"`
}

// Disapproval names the teams whose standing change request blocks.
type Disapproval struct {
	Teams []string `json:"teams"`
}

type rawApprovalRule struct {
	Name     string          `json:"name"`
	If       *RuleIf         `json:"if"`
	Requires *rawRequires    `json:"requires"`
	Options  *rawRuleOptions `json:"options"`
}

type rawRequires struct {
	Count       *json.Number `json:"count"`
	Users       []string     `json:"users"`
	Teams       []string     `json:"teams"`
	Permissions []string     `json:"permissions"`
	CodeOwners  bool         `json:"code_owners"`
}

type rawRuleOptions struct {
	AllowAuthor        bool  `json:"allow_author"`
	AllowContributors  bool  `json:"allow_contributors"`
	InvalidateOnPush   *bool `json:"invalidate_on_push"`
	IgnoreUpdateMerges bool  `json:"ignore_update_merges"`
}

var teamSlug = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// applyRules resolves approval.mode, approval.rules and
// approval.disapproval. A profile may not set them (base != nil).
func (p *parser) applyRules(a *Approval, ra *rawApproval, at fieldPath, base *Approval) error {
	if base != nil {
		for name, set := range map[string]bool{"mode": ra.Mode != nil, "rules": ra.Rules != nil, "disapproval": ra.Disapproval != nil} {
			if set {
				return p.errf(at.key(name), "a profile cannot change approval rules")
			}
		}
		return nil
	}
	if ra.Rules == nil {
		if ra.Mode != nil {
			return p.errf(at.key("mode"), "set without approval.rules")
		}
	} else {
		a.Mode = ModeAnd
		if ra.Mode != nil {
			a.Mode = *ra.Mode
		}
	}
	seen := map[string]int{}
	for i, rr := range ra.Rules {
		rp := at.key("rules").idx(i)
		if j, dup := seen[rr.Name]; dup {
			return p.errf(rp.key("name"), "duplicate rule name %q (first at rules[%d])", rr.Name, j)
		}
		seen[rr.Name] = i
		r, err := p.resolveRule(rr, rp)
		if err != nil {
			return err
		}
		a.Rules = append(a.Rules, r)
	}
	if ra.Disapproval != nil {
		if err := p.checkTeams(ra.Disapproval.Teams, at.key("disapproval").key("teams")); err != nil {
			return err
		}
		a.Disapproval = &Disapproval{Teams: slices.Clone(ra.Disapproval.Teams)}
	}
	return nil
}

func (p *parser) resolveRule(rr rawApprovalRule, at fieldPath) (ApprovalRule, error) {
	r := ApprovalRule{Name: rr.Name, Requires: RuleRequires{Count: 1}, Options: RuleOptions{InvalidateOnPush: true}}
	if rr.If != nil {
		r.If = *rr.If
		if err := p.checkIf(r.If, at.key("if")); err != nil {
			return r, err
		}
	}
	if rq := rr.Requires; rq != nil {
		if rq.Count != nil {
			n, err := strconv.Atoi(string(*rq.Count))
			if err != nil || n < 1 || n > 10 {
				return r, p.errf(at.key("requires").key("count"), "%s is not an integer from 1 to 10", string(*rq.Count))
			}
			r.Requires.Count = n
		}
		r.Requires.Users, r.Requires.Teams, r.Requires.CodeOwners = rq.Users, rq.Teams, rq.CodeOwners
		if err := p.checkTeams(rq.Teams, at.key("requires").key("teams")); err != nil {
			return r, err
		}
		for _, role := range roles {
			if slices.Contains(rq.Permissions, role) {
				r.Requires.Permissions = append(r.Requires.Permissions, role)
			}
		}
		if len(r.Requires.Permissions) != len(rq.Permissions) {
			return r, p.errf(at.key("requires").key("permissions"), "permissions must be distinct values of %s", strings.Join(roles, ", "))
		}
	}
	if o := rr.Options; o != nil {
		r.Options = RuleOptions{AllowAuthor: o.AllowAuthor, AllowContributors: o.AllowContributors,
			InvalidateOnPush: o.InvalidateOnPush == nil || *o.InvalidateOnPush, IgnoreUpdateMerges: o.IgnoreUpdateMerges}
	}
	return r, nil
}

func (p *parser) checkIf(c RuleIf, at fieldPath) error {
	if cf := c.ChangedFiles; cf != nil {
		for name, globs := range map[string][]string{"paths": cf.Paths, "ignore": cf.Ignore} {
			for i, g := range globs {
				if err := pathglob.Valid(g); err != nil {
					return p.errf(at.key("changed_files").key(name).idx(i), "%v", err)
				}
			}
		}
	}
	if c.TitleMatches != "" {
		if _, err := regexp.Compile(c.TitleMatches); err != nil {
			return p.errf(at.key("title_matches"), "not an RE2 regular expression: %v", err)
		}
	}
	return p.checkTeams(c.AuthorInTeam, at.key("author_in_team"))
}

func (p *parser) checkTeams(teams []string, at fieldPath) error {
	for i, t := range teams {
		if !teamSlug.MatchString(t) {
			return p.errf(at.idx(i), "%q is not org/team-slug", t)
		}
	}
	return nil
}
