package bundle

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/replay"
)

// TestRequireRule: --require-rule accepts a bundle whose approval was
// credited to the rule and refuses one credited to another rule only, or
// to none, with rule-not-satisfied.
func TestRequireRule(t *testing.T) {
	k := newKey(t)
	st := storeWith(t, k)
	review := func(rules ...approval.Credit) *replay.GitHubReview {
		return &replay.GitHubReview{Login: "alice", UserID: 7, ReviewID: 11, Commit: strings.Repeat("a", 40), Permission: "write", Rules: rules}
	}
	credited := makeRun(t, runOpts{approve: []string{"alice"}, reviews: map[string]*replay.GitHubReview{
		"alice": review(approval.Credit{Rule: "backend", Via: approval.ViaTeam, Team: "acme/backend"},
			approval.Credit{Rule: "owners", Via: approval.ViaCodeOwner, Paths: []string{"src/a.go"}}),
	}})
	plain := makeRun(t, runOpts{approve: []string{"alice"}, reviews: map[string]*replay.GitHubReview{"alice": review()}})
	for _, c := range []struct {
		name  string
		f     *fixture
		rules []string
		want  Reason
	}{
		{"credited", credited, []string{"backend"}, ""},
		{"both credited", credited, []string{"backend", "owners"}, ""},
		{"another rule", credited, []string{"security"}, RuleNotSatisfied},
		{"one of two missing", credited, []string{"backend", "security"}, RuleNotSatisfied},
		{"no credits", plain, []string{"backend"}, RuleNotSatisfied},
		{"not required", plain, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := export(t, c.f, k, ExportOptions{})
			o := anyRun
			o.RequireRules = c.rules
			_, err := Verify(bytes.NewReader(b), st, o)
			if reasonOf(err) != c.want {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if c.want != "" && !strings.Contains(err.Error(), "security") && !strings.Contains(err.Error(), "backend") {
				t.Fatalf("detail does not name the rule: %v", err)
			}
		})
	}
}
