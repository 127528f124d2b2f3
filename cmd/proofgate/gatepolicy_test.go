package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
)

// Every member of the policy description is one a policy file can set
// (its flag, or unsafe and require_subjects, handled apart), and every
// flag named exists on bundle verify: a new gate requirement is refused
// here until --policy can carry it.
func TestGatePolicyCoversTheDescription(t *testing.T) {
	mapped := map[string]string{"unsafe": "", "require_subjects": ""}
	for _, m := range gatePolicyMembers {
		mapped[m.member] = m.flag
	}
	typ := reflect.TypeFor[bundle.PolicyDescription]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if _, ok := mapped[name]; !ok {
			t.Errorf("PolicyDescription member %q has no flag in gatePolicyMembers", name)
		}
		delete(mapped, name)
	}
	if len(mapped) > 0 {
		t.Errorf("gatePolicyMembers maps members the description does not have: %v", mapped)
	}
	c := verifyBundleCmd(&globals{})
	for _, m := range gatePolicyMembers {
		if c.Flags().Lookup(m.flag) == nil {
			t.Errorf("member %s: bundle verify has no --%s", m.member, m.flag)
		}
	}
	for u, flag := range gatePolicyUnsafe {
		if c.Flags().Lookup(flag) == nil {
			t.Errorf("unsafe %s: bundle verify has no --%s", u, flag)
		}
	}
}
