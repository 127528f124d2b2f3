package bundle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/kernel/replay"
)

// RuleNotSatisfied is the refusal of WithRequireRule.
const RuleNotSatisfied Reason = "rule-not-satisfied"

// WithRequireRule requires the run's approval to have satisfied the
// approval rule named name: at least one approved decision of the signed
// predicate carries a credit (github.rules[].rule) for it. The approval
// evaluation grants credits only for a rule that held as a whole (its
// count, teams and code owners) at the decision, so a credit is the
// signer's statement that the rule was met; a bundle whose decisions
// credit other rules only, or none, is refused with RuleNotSatisfied.
// Repeat it to require several rules.
func WithRequireRule(name string) PolicyOption {
	return func(p *Policy) { p.requireRules = append(p.requireRules, name) }
}

// checkRules applies WithRequireRule to the predicate's decisions (which
// equal the audit of the signed log).
func (p *Policy) checkRules(ds []replay.Decision, id string) error {
	for _, want := range p.requireRules {
		if !creditsRule(ds, want) {
			return refuse(RuleNotSatisfied, fmt.Sprintf("no approval satisfied rule %q (credited rules: %s)", clip(want), creditedRules(ds)), id, nil)
		}
	}
	return nil
}

func creditsRule(ds []replay.Decision, name string) bool {
	for _, d := range ds {
		if d.Decision != "approved" || d.GitHub == nil {
			continue
		}
		for _, c := range d.GitHub.Rules {
			if c.Rule == name {
				return true
			}
		}
	}
	return false
}

func creditedRules(ds []replay.Decision) string {
	var names []string
	for _, d := range ds {
		if d.Decision != "approved" || d.GitHub == nil {
			continue
		}
		for _, c := range d.GitHub.Rules {
			if n := clip(c.Rule); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
