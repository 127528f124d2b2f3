package approval

// Requirement is what approving a run takes: Required distinct people and
// every Rule met. The contract's approval.required is the count; approval
// rules (teams, code owners, paths) are to be added as Rules.
type Requirement struct {
	Required int
	Rules    []Rule
}

// Rule is one condition on the people who approved, beyond their number:
// "one of the approvers is in team X", "the code owners of every changed
// path approved". A rule gets what it needs beyond the approvers (team
// membership, changed paths) when it is made. No rules exist yet.
type Rule interface {
	// Unmet says what approvers lack under the rule, or "" when they meet it.
	Unmet(approvers []Person) string
}

// Verdict is a requirement measured against the decisions.
type Verdict struct {
	// Decision is Approved when the requirement is met, Rejected when a
	// rejection stands, and "" while approvals are missing.
	Decision  Decision
	Approvals int      // distinct approvers counted
	Required  int      // Requirement.Required
	Unmet     []string // what the rules that are not met say
}

// Missing is the number of approvals still needed.
func (v Verdict) Missing() int { return max(0, v.Required-v.Approvals) }

// Of measures tally t against r: its Counted approvals, its rejection and
// r's Rules over its Approvers.
func (r Requirement) Of(t *Tally) Verdict {
	v := r.Verdict(t.Counted(), t.Rejected())
	if len(r.Rules) == 0 {
		return v
	}
	approvers := t.Approvers()
	for _, rule := range r.Rules {
		if why := rule.Unmet(approvers); why != "" {
			v.Unmet = append(v.Unmet, why)
		}
	}
	if v.Decision == Approved && len(v.Unmet) > 0 {
		v.Decision = ""
	}
	return v
}

// Verdict measures a count made elsewhere (a code host's review state, say):
// approvals distinct approvers, and whether a rejection stands. Rules are
// not applied: they need the people, which only Of has.
func (r Requirement) Verdict(approvals int, rejected bool) Verdict {
	v := Verdict{Approvals: approvals, Required: r.Required}
	switch {
	case rejected:
		v.Decision = Rejected
	case approvals >= r.Required:
		v.Decision = Approved
	}
	return v
}
