// Package policy is the gate every tool call of an agent session passes:
// the contract's ordered policy rules (contract.Rule), matched by exact
// tool name, first match wins, block by default. It is pure: no I/O, and it
// sees identifiers only, never arguments.
//
// Matching is byte equality of the call's tool name with the rule's tool.
// No case folding, no Unicode normalisation, no trimming: "Greet",
// "gr\u0435et" (Cyrillic e), a fullwidth "ｇreet", "greet " and "greet\x00"
// are different names, and since the contract admits only lower-case ASCII
// names, none of them is a contract tool, so each is blocked by the default.
//
// Decisions:
//
//   - the call names no contract tool: Block, rule -1, id "default";
//   - otherwise the first rule whose tool equals the name decides, with the
//     rule's index, id and reason; later rules for the same tool are never
//     consulted (an allow after a block does not allow);
//   - no rule names the tool: Block, rule -1, id "default".
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

// Valid reports whether e is one of the three effects.
func (e Effect) Valid() bool {
	return e == Allow || e == Block || e == RequireApproval
}

// DefaultRuleID is the rule id of a decision no rule made.
const DefaultRuleID = contract.DefaultRuleID

// Reasons of the default decisions.
const (
	ReasonUnknownTool = "not a tool of the contract (block by default)"
	ReasonNoRule      = "no policy rule names this tool (block by default)"
)

// Decision is the gate's verdict on one call.
type Decision struct {
	Effect Effect `json:"effect"`
	Rule   int    `json:"rule"`    // index into contract.Policy; -1 = the default
	RuleID string `json:"rule_id"` // the rule's id; "default" for -1
	Reason string `json:"reason,omitempty"`
}

// Default reports whether no rule made the decision.
func (d Decision) Default() bool { return d.Rule < 0 }

// Gate decides calls against one resolved contract. It copies the rule
// list and the tool names, so later changes to the contract value do not
// change its decisions.
type Gate struct {
	tools []contract.Tool
	rules []contract.Rule
	known map[string]bool
}

// New returns the gate of c.
func New(c *contract.Resolved) *Gate {
	g := &Gate{known: map[string]bool{}}
	if c == nil {
		return g
	}
	g.tools = append([]contract.Tool(nil), c.Tools...)
	g.rules = append([]contract.Rule(nil), c.Policy...)
	for _, t := range c.Tools {
		g.known[t.Name] = true
	}
	return g
}

// Decide returns the decision for a call of the named tool.
func (g *Gate) Decide(tool string) Decision {
	if !g.known[tool] {
		return Decision{Effect: Block, Rule: -1, RuleID: DefaultRuleID, Reason: ReasonUnknownTool}
	}
	for i, r := range g.rules {
		if r.Tool != tool {
			continue
		}
		e := Effect(r.Effect)
		if !e.Valid() {
			// The loader refuses this; a hand-made contract value that
			// carries it is blocked, never allowed.
			e = Block
		}
		return Decision{Effect: e, Rule: i, RuleID: r.ID, Reason: r.Reason}
	}
	return Decision{Effect: Block, Rule: -1, RuleID: DefaultRuleID, Reason: ReasonNoRule}
}

// Visible returns the tools whose decision is not Block (allowed, or
// allowed after approval), in contract order: what an agent is shown.
func (g *Gate) Visible() []contract.Tool {
	var out []contract.Tool
	for _, t := range g.tools {
		if g.Decide(t.Name).Effect != Block {
			out = append(out, t)
		}
	}
	return out
}
