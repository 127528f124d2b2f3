package main

import (
	"testing"

	"github.com/proofgate/proofgate/bundle"
)

// Every member of the policy description is one a policy file can set
// (its flag, or unsafe and require_subjects, handled apart), and every
// flag its tags name exists on bundle verify: a new gate requirement is
// refused here until its definition names the flag that gives it.
func TestGatePolicyCoversTheDescription(t *testing.T) {
	apart := map[string]bool{"unsafe": true, "require_subjects": true}
	c := verifyBundleCmd(&globals{})
	reqs := bundle.PolicyDescription{}.Requirements()
	if len(reqs) < 12 {
		t.Fatalf("%d requirements: the description's tags did not read", len(reqs))
	}
	for _, r := range reqs {
		switch {
		case r.Flag == "":
			t.Errorf("PolicyDescription member %q has no flag tag", r.Member)
		case r.Flag == "-" && !apart[r.Member]:
			t.Errorf("PolicyDescription member %q says flag \"-\", and gatepolicy.go sets no such member apart", r.Member)
		case r.Flag != "-" && c.Flags().Lookup(r.Flag) == nil:
			t.Errorf("member %s: bundle verify has no --%s", r.Member, r.Flag)
		}
		delete(apart, r.Member)
	}
	if len(apart) > 0 {
		t.Errorf("gatepolicy.go sets apart members the description does not have: %v", apart)
	}
	for u, flag := range gatePolicyUnsafe {
		if c.Flags().Lookup(flag) == nil {
			t.Errorf("unsafe %s: bundle verify has no --%s", u, flag)
		}
	}
	for _, flag := range []string{"require-rule", "require-authorization"} {
		if !repeatable(c, flag) {
			t.Errorf("--%s is not read as repeatable", flag)
		}
	}
	if repeatable(c, "commit") {
		t.Error("--commit is read as repeatable")
	}
}
