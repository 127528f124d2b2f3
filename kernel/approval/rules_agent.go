package approval

import (
	"slices"

	"github.com/proofgate/proofgate/kernel/contract"
)

// from_agent_session (ADR 0021). A provider proves the fact from evidence
// a pull request cannot forge, but a pull request can always hide that
// evidence: "not proven" means unknown, never "not from an agent
// session". So when the fact is not proven, EvaluateRules decides as the
// truth may be either way: the rules must be met on the facts as they are
// AND as if the head came from an agent session. A rule that relaxes for
// agent work (an extra way to pass when the fact holds) then changes
// nothing for an unproven head, exactly as intended; a rule that tightens
// for agent work (more reviewers when the fact holds) applies to every
// unproven head, since hiding the evidence would otherwise skip it. The
// reverse condition from_agent_session: false ("not proven") follows the
// same rule. A proven fact is known, and decides alone.

// UsesAgentSession reports whether a rule of a reads from_agent_session:
// only then does a provider look for agent-session evidence.
func UsesAgentSession(a contract.Approval) bool {
	for _, r := range a.Rules {
		if r.If.FromAgentSession != nil {
			return true
		}
	}
	return false
}

// bothWorlds evaluates a as if the head came from an agent session and
// folds it into d, the evaluation of the unproven facts f: d is satisfied
// only when both are; the other world's credits join d's (each is a
// requirement that was met and enforced), and d.IfAgentSession carries it
// for what it still waits for.
func bothWorlds(d *RulesDecision, a contract.Approval, f Facts) error {
	f.FromAgentSession = true
	alt, err := evaluateRules(a, f)
	if err != nil {
		return err
	}
	d.IfAgentSession = &alt
	d.Satisfied = d.Satisfied && alt.Satisfied
	if len(alt.Credits) > 0 && d.Credits == nil {
		d.Credits = map[int64][]Credit{}
	}
	for id, cs := range alt.Credits {
		for _, c := range cs {
			if !slices.ContainsFunc(d.Credits[id], func(h Credit) bool { return h.Rule == c.Rule && h.Via == c.Via && h.Team == c.Team }) {
				d.Credits[id] = append(d.Credits[id], c)
			}
		}
	}
	return nil
}

// stamp names the proving implementation run in a credit of a rule whose
// if requires from_agent_session: true, when the fact was proven.
func (ev *ruleEval) stamp(r contract.ApprovalRule, c Credit) Credit {
	if v := r.If.FromAgentSession; v != nil && *v && ev.f.FromAgentSession {
		c.AgentSession = ev.f.AgentSessionRun
	}
	return c
}
