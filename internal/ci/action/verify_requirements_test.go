package action

import (
	"os"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
)

// Every gate requirement of the policy description (bundle's one
// definition) is an input of the verify action that the action reads, or
// one of the three the action derives and never takes from an input: the
// repository (GITHUB_REPOSITORY), the witness time (the artifact's
// created_at) and the unsafe opt-outs (a release gate in the action takes
// none). A new requirement fails here until the action can set it.
func TestVerifyInputsCoverTheDescription(t *testing.T) {
	var v actionYAML
	readYAML(t, "verify/action.yml", &v)
	var src strings.Builder
	files, _ := os.ReadDir(".")
	for _, f := range files {
		if n := f.Name(); strings.HasPrefix(n, "verify") && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
	}
	derived := map[string]bool{"repo": true, "witnessed_at": true, "unsafe": true}
	for _, r := range (bundle.PolicyDescription{}).Requirements() {
		switch {
		case r.Input == "-":
			if !derived[r.Member] {
				t.Errorf("member %s: input \"-\", but the action derives only %v", r.Member, derived)
			}
			delete(derived, r.Member)
		case r.Input == "":
			t.Errorf("member %s has no input tag", r.Member)
		default:
			if _, ok := v.Inputs[r.Input]; !ok {
				t.Errorf("member %s: verify/action.yml has no input %q", r.Member, r.Input)
			}
			if !strings.Contains(src.String(), `input("`+r.Input+`")`) {
				t.Errorf("member %s: the verify action never reads input %q", r.Member, r.Input)
			}
		}
	}
	if len(derived) > 0 {
		t.Errorf("derived members the description does not have: %v", derived)
	}
	// Input policy (verify_policy.go) refuses exactly the members that
	// describe one release or opt out: the derived three, and the source
	// and contract the action binds to the release commit.
	members := map[string]bool{}
	for _, r := range (bundle.PolicyDescription{}).Requirements() {
		members[r.Member] = true
		if _, refused := policyDerived[r.Member]; refused != (r.Input == "-" || r.Member == "commit" || r.Member == "tree" || r.Member == "contract_hash") {
			t.Errorf("member %s: input policy refuses it: %v", r.Member, refused)
		}
	}
	for m := range policyDerived {
		if !members[m] {
			t.Errorf("input policy refuses %s, which the description does not have", m)
		}
	}
	for _, name := range identityInputs {
		if _, ok := v.Inputs[name]; !ok {
			t.Errorf("identity %s: verify/action.yml has no such input", name)
		}
	}
	for name, want := range inputDefaults {
		if d := v.Inputs[name].Default; d == nil || *d != want {
			t.Errorf("input %s: verify/action.yml's default %v, input policy takes %q for it", name, d, want)
		}
	}
	if _, ok := v.Inputs["policy"]; !ok {
		t.Error("verify/action.yml has no input policy")
	}
}
