// Package policy is the gate every tool call of an agent session passes:
// the contract's ordered policy rules, matched by exact tool name, first
// match wins, block by default. It is pure: no I/O, identifiers only.
package policy

import "github.com/proofgate/proofgate/kernel/contract"

// Effect is what a decision does with a call.
type Effect string

// Effects.
const (
	Allow           Effect = "allow"
	Block           Effect = "block"
	RequireApproval Effect = "require-approval"
)

// DefaultRuleID names the decision no rule made.
const DefaultRuleID = "default"

// Decision is the gate's verdict on one call.
type Decision struct {
	Effect Effect `json:"effect"`
	Rule   int    `json:"rule"`    // index into contract.Policy; -1 = the default
	RuleID string `json:"rule_id"` // the rule's id; "default" for -1
	Reason string `json:"reason,omitempty"`
}

// Gate decides calls against one resolved contract.
type Gate struct {
	tools []contract.Tool
	rules []contract.Rule
}

// New returns the gate of c.
func New(c *contract.Resolved) *Gate {
	return &Gate{tools: c.Tools, rules: c.Policy}
}

// Decide returns the decision for a call of the named tool.
func (g *Gate) Decide(tool string) Decision {
	return Decision{Effect: Block, Rule: -1, RuleID: DefaultRuleID}
}

// Visible returns the tools whose decision is not Block, in contract order.
func (g *Gate) Visible() []contract.Tool {
	return nil
}
