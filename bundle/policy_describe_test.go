package bundle

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
)

// TestPolicyDescribe: the description says every requirement, lowercases
// SHAs, names each unsafe opt-out, and differs whenever the policy does.
func TestPolicyDescribe(t *testing.T) {
	sha := strings.Repeat("AB", 20)
	h := "sha256:" + strings.Repeat("0", 64)
	quick, base := "quick", ""
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	p, err := NewPolicy(WithCommit(sha), WithContractHash(h), WithRepo("Acme/Widget"), WithProfile(quick), WithApprovals(2), WithWitnessTime(at))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := canon.Marshal(p.Describe())
	want := `{"commit":"` + strings.ToLower(sha) + `","contract_hash":"` + h + `","profile":"quick","repo":"Acme/Widget","require_approvals":2,"witnessed_at":"2026-01-02T02:04:05.000000006Z"}`
	if string(got) != want {
		t.Fatalf("Describe:\n got %s\nwant %s", got, want)
	}
	u, err := NewPolicy(WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), WithDirtySourceUnsafe(), WithProfile(base))
	if err != nil {
		t.Fatal(err)
	}
	got, _ = canon.Marshal(u.Describe())
	if want := `{"profile":"","require_approvals":0,"unsafe":["any-source","any-contract","dirty-source"]}`; string(got) != want {
		t.Fatalf("Describe(unsafe):\n got %s\nwant %s", got, want)
	}
	// A required base contract differs from no profile requirement.
	n, _ := NewPolicy(WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), WithDirtySourceUnsafe())
	a, _ := canon.Marshal(n.Describe())
	if string(a) == string(got) {
		t.Fatal("profile \"\" and no profile describe alike")
	}
	if d := (*Policy)(nil).Describe(); d.Unsafe != nil || d.Commit != "" {
		t.Fatalf("nil policy: %+v", d)
	}
}

// docs/SPEC.md §9 lists every member of the policy description, in the
// paragraph that defines it.
func TestSpecListsEveryRequirement(t *testing.T) {
	b, err := os.ReadFile("../docs/SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "## 9. ")
	if !ok {
		t.Fatal("docs/SPEC.md has no section 9")
	}
	_, s, ok = strings.Cut(s, "The policy description")
	if !ok {
		t.Fatal("docs/SPEC.md §9 does not define the policy description")
	}
	s, _, _ = strings.Cut(s, "empty members left out")
	for _, r := range (PolicyDescription{}).Requirements() {
		if !strings.Contains(s, "`"+r.Member+"`") {
			t.Errorf("docs/SPEC.md §9's policy description does not list `%s`", r.Member)
		}
	}
}

// Requirements gives each member's value as flag values: strings as they
// are, a profile only when required, numbers and booleans spelled as flags
// parse them, one value per element of a list.
func TestRequirementsValues(t *testing.T) {
	base := ""
	d := PolicyDescription{Commit: "ab", Profile: &base, RequireApprovals: 2, RequireSandbox: true, RequireRules: []string{"a", "b"}}
	got := map[string][]string{}
	for _, r := range d.Requirements() {
		got[r.Member] = r.Values
	}
	want := map[string][]string{"commit": {"ab"}, "tree": {""}, "profile": {""}, "require_approvals": {"2"}, "require_sandbox": {"true"}, "require_rules": {"a", "b"}, "unsafe": {}}
	for m, w := range want {
		if !slices.Equal(got[m], w) {
			t.Errorf("%s: %q, want %q", m, got[m], w)
		}
	}
	if v := (PolicyDescription{}).Requirements()[4]; v.Member != "profile" || v.Values != nil {
		t.Errorf("an unrequired profile gives %+v", v)
	}
}
