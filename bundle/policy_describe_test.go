package bundle

import (
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
