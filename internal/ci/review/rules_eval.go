package review

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/proofgate/proofgate/kernel/approval"
)

// facts are in as the kernel's approval facts.
func (in Input) facts() approval.Facts {
	rf := in.RuleFacts
	f := approval.Facts{
		Head: in.Head, BaseBranch: rf.BaseBranch, Title: rf.Title, Labels: rf.Labels,
		Author: in.Author.account(), Files: rf.Files, Roles: map[string]string{},
		Teams: rf.Teams, CodeOwners: rf.CodeOwners, UpdateMergedFrom: rf.UpdateMergedFrom,
		PRCommits: rf.PRCommits, FromAgentSession: rf.FromAgentSession,
	}
	if a := rf.AgentSession; a != nil && a.Proven {
		f.AgentSessionRun = a.Implementation
	}
	for _, u := range in.CommitUsers {
		f.Contributors = append(f.Contributors, u.account())
	}
	for _, r := range in.Reviews {
		f.Reviews = append(f.Reviews, approval.RuleReview{ID: r.ID, Reviewer: r.User.account(), Bot: r.User.IsBot(),
			State: strings.ToUpper(r.State), Commit: r.CommitID})
		if p, ok := in.Permissions[r.User.ID]; ok {
			f.Roles[strings.ToLower(r.User.Login)] = p.Role()
		}
	}
	return f
}

// hasRules reports whether the contract has approval rules or a
// disapproval rule.
func hasRules(in Input) bool { return len(in.Rule.Rules) > 0 || in.Rule.Disapproval != nil }

// applyRules measures the approval rules and folds them into d. When a
// rule applies, the approvals the rules credited are the ones counted
// (and recorded, each with its credits); approval.required stays a
// floor on their number. With no applicable rule the base decision
// stands. A disapproval, a base blocker or an evaluation error keeps the
// decision unsatisfied.
func applyRules(d *Decision, in Input) {
	byID := map[int64]Review{}
	for _, r := range in.Reviews {
		byID[r.ID] = r
	}
	rd, err := approval.EvaluateRules(in.Rule, in.facts())
	if err == nil && !in.RuleFacts.Fetched {
		err = errors.New("the facts approval rules read were not fetched (FetchRuleFacts)")
	}
	if err != nil {
		d.Satisfied, d.RulesError = false, err.Error()
		d.Summary += "; approval rules refused: " + err.Error()
		return
	}
	d.Rules = &rd
	d.AgentSession = in.RuleFacts.AgentSession
	if len(in.RuleFacts.NotKept) > 0 {
		d.NotKept = in.RuleFacts.NotKept
	}
	if rd.Applied {
		for _, a := range d.Counted {
			if _, ok := rd.Credits[a.ReviewID]; !ok {
				d.Ignored = append(d.Ignored, Ignored{Login: a.Login, UserID: a.UserID, ReviewID: a.ReviewID, State: StateApproved,
					Commit: a.Commit, Reason: ReasonNotCredited, Why: "no applicable approval rule credited it"})
			}
		}
		d.Counted = nil
		// The kernel completes the run after approval.required recorded
		// approvers: record first the approvals credited to the most
		// rules, so the recorded ones carry as many credits as possible.
		for _, id := range byCredits(rd.Credits) {
			r := byID[id]
			perm := "none"
			if p, ok := in.Permissions[r.User.ID]; ok {
				perm = p.Role()
			}
			d.Counted = append(d.Counted, Approval{Login: r.User.Login, UserID: r.User.ID, ReviewID: r.ID,
				SubmittedAt: r.SubmittedAt, Commit: r.CommitID, Permission: perm, Rules: rd.Credits[id]})
		}
	}
	d.Missing = max(0, in.Rule.Required-len(d.Counted))
	d.Satisfied = in.Head != "" && rd.Satisfied && len(d.Blocking) == 0 && d.Missing == 0
	if rd.Applied {
		d.Summary = fmt.Sprintf("%d approval(s) credited by the approval rules on %s (%d required)", len(d.Counted), short(in.Head), in.Rule.Required)
	}
	if p := rd.Pending(); p != "" {
		d.Summary += "; " + p
	}
	if rd.Applied && d.Satisfied {
		d.Summary += ": approval rules met"
	}
	if a := d.AgentSession; a != nil && !a.Proven {
		d.Summary += "; from_agent_session is not proven (" + a.Reason + ": " + a.Detail + ")"
	}
}

func byCredits(m map[int64][]approval.Credit) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	rules := func(id int64) int {
		seen := map[string]bool{}
		for _, c := range m[id] {
			seen[c.Rule] = true
		}
		return len(seen)
	}
	sort.SliceStable(ids, func(i, j int) bool {
		if a, b := rules(ids[i]), rules(ids[j]); a != b {
			return a > b
		}
		return ids[i] < ids[j]
	})
	return ids
}
