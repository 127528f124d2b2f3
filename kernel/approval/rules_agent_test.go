package approval

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/contract"
)

// agentRule is teamRule under if: {from_agent_session: v}, requiring the
// security team.
func agentRule(name string, v bool) contract.ApprovalRule {
	r := teamRule(name)
	r.If.FromAgentSession = &v
	r.Requires.Teams = []string{"acme/security"}
	return r
}

// A rule that relaxes for agent work (mode or: an extra way to pass) is
// safe: an unproven head decides exactly as without it; a proven one may
// take the extra way.
func TestAgentSessionRelaxingRule(t *testing.T) {
	a := rules(agentRule("agent-work", true), teamRule("backend"))
	a.Mode = contract.ModeOr
	f := baseFacts()
	f.Reviews = []RuleReview{approved(10, carol, head)} // security, not backend
	if d := eval(t, a, f); d.Satisfied {
		t.Fatalf("unproven head passed by the agent rule: %+v", d)
	}
	f.FromAgentSession = true
	if d := eval(t, a, f); !d.Satisfied || d.IfAgentSession != nil || d.Credits[10][0].Rule != "agent-work" {
		t.Fatalf("proven head: %+v", d)
	}
	f.FromAgentSession = false
	f.Reviews = []RuleReview{approved(11, alice, head)} // backend
	if d := eval(t, a, f); !d.Satisfied {
		t.Fatalf("unproven head with the ordinary approval: %+v", d)
	}
}

// A rule that tightens for agent work (mode and: more reviewers when the
// fact holds) would be skipped by hiding the evidence: an unproven head
// must meet it too, and the decision says why.
func TestAgentSessionTighteningRuleHoldsUnproven(t *testing.T) {
	a := rules(agentRule("agent-security", true), teamRule("backend"))
	f := baseFacts()
	f.Reviews = []RuleReview{approved(11, alice, head)} // backend only
	d := eval(t, a, f)
	if d.Satisfied || d.IfAgentSession == nil || d.IfAgentSession.Satisfied {
		t.Fatalf("hiding the evidence skipped the tightening rule: %+v", d)
	}
	if p := d.Pending(); !strings.Contains(p, "agent-security (0 of 1; @acme/security)") || !strings.Contains(p, "from_agent_session is not proven") {
		t.Fatalf("pending %q", p)
	}
	f.Reviews = append(f.Reviews, approved(12, carol, head))
	d = eval(t, a, f)
	if !d.Satisfied {
		t.Fatalf("both worlds met: %+v", d)
	}
	if cs := d.Credits[12]; len(cs) != 1 || cs[0].Rule != "agent-security" {
		t.Fatalf("the security approval's credit was not kept: %+v", d.Credits)
	}
}

// The reverse condition (from_agent_session: false, "not proven") is
// the other way to write a tightening: required unless proven.
func TestAgentSessionReverseCondition(t *testing.T) {
	a := rules(agentRule("humans-need-security", false), teamRule("backend"))
	f := baseFacts()
	f.Reviews = []RuleReview{approved(11, alice, head)}
	if d := eval(t, a, f); d.Satisfied {
		t.Fatalf("unproven head skipped the rule: %+v", d)
	}
	f.FromAgentSession = true
	if d := eval(t, a, f); !d.Satisfied {
		t.Fatalf("a proven head still needs security: %+v", d)
	}
}
