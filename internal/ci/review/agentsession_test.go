package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/contract"
)

// fetcher answers a fixed fact and counts its calls.
type fetcher struct {
	fact  review.AgentSession
	calls int
	head  string
}

func (f *fetcher) AgentSession(_ context.Context, head string) review.AgentSession {
	f.calls++
	f.head = head
	return f.fact
}

// agentRules: agent work may be approved by the backend team alone (mode
// or), anything else needs a user nobody is.
func agentRules() contract.Approval {
	yes := true
	a := teamRules(contract.RuleOptions{},
		contract.ApprovalRule{Name: "agent-work", If: contract.RuleIf{FromAgentSession: &yes},
			Requires: contract.RuleRequires{Count: 1, Teams: []string{"acme/backend"}}, Options: contract.RuleOptions{InvalidateOnPush: true}},
		contract.ApprovalRule{Name: "others", Requires: contract.RuleRequires{Count: 1, Users: []string{"nobody"}}, Options: contract.RuleOptions{InvalidateOnPush: true}})
	a.Mode = contract.ModeOr
	return a
}

func TestAgentSessionFact(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fetcher   *fetcher
		satisfied bool
		reason    string
	}{
		{"no fetcher: never proven", nil, false, review.ReasonNoFetcher},
		{"fetcher refuses", &fetcher{fact: review.AgentSession{Reason: "other-commit", Detail: "run x verified another commit"}}, false, "other-commit"},
		{"fetcher proves", &fetcher{fact: review.AgentSession{Proven: true, Implementation: "impl", Run: "succ", Sessions: 1}}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			f.rulesSetup()
			f.review(bob, "APPROVED", head)
			var opts review.Options
			if tc.fetcher != nil {
				opts.AgentSession = tc.fetcher
			}
			d, err := review.DecideWith(context.Background(), f.gh, owner, repo, prNum, head, agentRules(), opts)
			if err != nil {
				t.Fatal(err)
			}
			a := d.AgentSession
			if d.Satisfied != tc.satisfied || a == nil || a.Reason != tc.reason || a.Proven != tc.satisfied {
				t.Fatalf("satisfied %v agent session %+v\n%s", d.Satisfied, a, d.Summary)
			}
			if tc.fetcher != nil && (tc.fetcher.calls != 1 || tc.fetcher.head != head) {
				t.Fatalf("fetcher called %d times for %s", tc.fetcher.calls, tc.fetcher.head)
			}
			if !tc.satisfied && !strings.Contains(d.Summary, "from_agent_session is not proven ("+tc.reason) {
				t.Fatalf("summary %q", d.Summary)
			}
			if tc.satisfied && (len(d.Counted) != 1 || d.Counted[0].Rules[0].AgentSession != "impl") {
				t.Fatalf("counted %+v", d.Counted)
			}
		})
	}
	// A contract whose rules do not read the fact never looks for evidence.
	f := setup(t)
	f.rulesSetup()
	f.review(bob, "APPROVED", head)
	fe := &fetcher{}
	d, err := review.DecideWith(context.Background(), f.gh, owner, repo, prNum, head, teamRules(contract.RuleOptions{}), review.Options{AgentSession: fe})
	if err != nil || fe.calls != 0 || d.AgentSession != nil {
		t.Fatalf("%v calls %d %+v", err, fe.calls, d.AgentSession)
	}
}
