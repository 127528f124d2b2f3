package bundle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Refusals of WithRequireAuthorization.
const (
	// AuthorizationMissing: no approved authorization for the target (none
	// at all, or only for other targets).
	AuthorizationMissing Reason = "authorization-missing"
	// AuthorizationRejected: the target's authorization was rejected; one
	// rejection withholds a target whatever else is recorded for it.
	AuthorizationRejected Reason = "authorization-rejected"
)

// WithRequireAuthorization requires the run to authorize publishing its
// result to target (issue 16 item 3): the signed predicate's
// authorizations (which equal the audit of the signed log: each an
// authorization.recorded bound to the run's verification digest, source
// and contract) hold an approved authorization for exactly that target and
// no rejected one. Otherwise the bundle is refused with
// AuthorizationMissing or AuthorizationRejected. Repeat it to require
// several targets.
func WithRequireAuthorization(target string) PolicyOption {
	return func(p *Policy) { p.requireAuthorizations = append(p.requireAuthorizations, target) }
}

// checkAuthorizations applies WithRequireAuthorization.
func (p *Policy) checkAuthorizations(s *RunSummary, id string) error {
	for _, want := range p.requireAuthorizations {
		if replay.Authorized(s.Authorizations, want) {
			continue
		}
		for _, a := range s.Authorizations {
			if a.Target == want && approval.Decision(a.Decision) == approval.Rejected {
				return refuse(AuthorizationRejected, fmt.Sprintf("the authorization for target %q was rejected by %s: %s", clip(want), clip(a.Actor), clip(a.Reason)), id, nil)
			}
		}
		return refuse(AuthorizationMissing, fmt.Sprintf("no authorization for target %q (authorized targets: %s)", clip(want), authorizedTargets(s.Authorizations)), id, nil)
	}
	return nil
}

// Authorized returns the targets the run of s authorizes, in the order of
// their first authorization; nil when none.
func Authorized(s *RunSummary) []string {
	var ts []string
	for _, a := range s.Authorizations {
		if replay.Authorized(s.Authorizations, a.Target) && !slices.Contains(ts, a.Target) {
			ts = append(ts, a.Target)
		}
	}
	return ts
}

func authorizedTargets(as []replay.Authorization) string {
	var ts []string
	for _, t := range Authorized(&RunSummary{Authorizations: as}) {
		ts = append(ts, clip(t))
	}
	if len(ts) == 0 {
		return "none"
	}
	return strings.Join(ts, ", ")
}

// PolicyAuthorization is a *PolicyError about a required authorization
// target that no authorization could name.
const PolicyAuthorization PolicyField = "authorization"

func (p *Policy) checkAuthorizationTargets() error {
	for _, t := range p.requireAuthorizations {
		if !replay.ValidTarget(t) {
			return &PolicyError{PolicyAuthorization, fmt.Sprintf("authorization target %q: want 1-200 characters of A-Z a-z 0-9 . _ : / # @ + -, starting with a letter or digit", clip(t))}
		}
	}
	return nil
}
