package approval

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/approval/codeowners"
	"github.com/proofgate/proofgate/kernel/contract"
)

const head, old = "1111111111111111111111111111111111111111", "0000000000000000000000000000000000000000"

func acct(login string, id int) Account {
	return Account{Provider: ProviderGitHub, Subject: strconv.Itoa(id), Login: login}
}

func approved(id int64, who Account, commit string) RuleReview {
	return RuleReview{ID: id, Reviewer: who, State: ReviewApproved, Commit: commit}
}

var (
	alice, bob, carol, dave = acct("alice", 1), acct("bob", 2), acct("carol", 3), acct("dave", 4)
)

func baseFacts() Facts {
	return Facts{
		Head: head, BaseBranch: "main", Author: dave,
		Files: []ChangedFile{{Path: "src/a.go"}},
		Roles: map[string]string{"alice": "write", "bob": "write", "carol": "admin", "dave": "write"},
		Teams: map[string]map[string]bool{
			"acme/backend":  {"alice": true, "bob": false, "carol": false, "dave": false},
			"acme/security": {"alice": false, "bob": false, "carol": true, "dave": false},
		},
	}
}

func teamRule(name string) contract.ApprovalRule {
	return contract.ApprovalRule{Name: name, Requires: contract.RuleRequires{Count: 1, Teams: []string{"acme/backend"}},
		Options: contract.RuleOptions{InvalidateOnPush: true}}
}

func rules(rs ...contract.ApprovalRule) contract.Approval {
	return contract.Approval{Required: 1, Roles: []string{"write", "maintain", "admin"}, Mode: contract.ModeAnd, Rules: rs}
}

func miss(t *testing.T, d RulesDecision, rule string, review int64) MissReason {
	t.Helper()
	for _, r := range d.Rules {
		if r.Name == rule {
			for _, m := range r.Misses {
				if m.ReviewID == review {
					return m.Reason
				}
			}
		}
	}
	return ""
}

func eval(t *testing.T, a contract.Approval, f Facts) RulesDecision {
	t.Helper()
	d, err := EvaluateRules(a, f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTeamRule(t *testing.T) {
	f := baseFacts()
	f.Reviews = []RuleReview{approved(10, alice, head)}
	d := eval(t, rules(teamRule("backend")), f)
	if !d.Satisfied || !d.Applied {
		t.Fatalf("%+v", d)
	}
	if c := d.Credits[10]; len(c) != 1 || c[0].Via != ViaTeam || c[0].Team != "acme/backend" || c[0].Rule != "backend" {
		t.Fatalf("credits %+v", d.Credits)
	}
}

// Hostile: a team member approving an older commit does not count.
func TestTeamMemberOlderCommit(t *testing.T) {
	f := baseFacts()
	f.Reviews = []RuleReview{approved(10, alice, old)}
	d := eval(t, rules(teamRule("backend")), f)
	if d.Satisfied || miss(t, d, "backend", 10) != MissStaleCommit {
		t.Fatalf("%+v", d)
	}
	if !strings.Contains(d.Pending(), "backend (0 of 1; @acme/backend)") {
		t.Fatalf("pending %q", d.Pending())
	}
	// ignore_update_merges carries it only when the provider proved the
	// head is old plus update merges.
	r := teamRule("backend")
	r.Options.IgnoreUpdateMerges = true
	if eval(t, rules(r), f).Satisfied {
		t.Fatal("kept without proof")
	}
	f.UpdateMergedFrom = map[string]bool{old: true}
	if !eval(t, rules(r), f).Satisfied {
		t.Fatal("a proven update merge did not keep the approval")
	}
}

// Hostile: an approver removed from the team before evaluation.
func TestRemovedFromTeam(t *testing.T) {
	f := baseFacts()
	f.Teams["acme/backend"]["alice"] = false
	f.Reviews = []RuleReview{approved(10, alice, head)}
	d := eval(t, rules(teamRule("backend")), f)
	if d.Satisfied || miss(t, d, "backend", 10) != MissNotQualified {
		t.Fatalf("%+v", d)
	}
}

// Hostile: an unresolved membership refuses; it never passes.
func TestUnresolvedTeam(t *testing.T) {
	f := baseFacts()
	delete(f.Teams, "acme/backend")
	f.Reviews = []RuleReview{approved(10, alice, head)}
	_, err := EvaluateRules(rules(teamRule("backend")), f)
	var ue *UnresolvedError
	if !errors.As(err, &ue) || ue.Team != "acme/backend" || ue.Login != "alice" {
		t.Fatalf("%v", err)
	}
}

// Hostile: a rule that matches no file is not applicable, never passes
// silently; with no applicable rule the base requirement decides.
func TestRuleMatchingNoFile(t *testing.T) {
	f := baseFacts()
	r := teamRule("docs")
	r.If.ChangedFiles = &contract.ChangedFiles{Paths: []string{"docs/**"}}
	d := eval(t, rules(r), f)
	if d.Applied || d.Rules[0].Applicable || d.Rules[0].NotApplicable == "" || len(d.Credits) != 0 {
		t.Fatalf("%+v", d)
	}
	// With another rule applicable, the inapplicable one neither helps
	// nor hinders under and; under or it cannot be the one that holds.
	other := teamRule("backend")
	a := rules(r, other)
	a.Mode = contract.ModeOr
	d = eval(t, a, f)
	if !d.Applied || d.Satisfied {
		t.Fatalf("or with one inapplicable and one unmet rule: %+v", d)
	}
	// ignore list: a test file only does not make the rule apply.
	r.If.ChangedFiles = &contract.ChangedFiles{Paths: []string{"src/**"}, Ignore: []string{"src/*.go"}}
	if eval(t, rules(r), f).Applied {
		t.Fatal("ignored path made the rule apply")
	}
}

// Hostile: a renamed file moving out of an owned path still needs the
// owners of the path it left.
func TestRenameOutOfOwnedPath(t *testing.T) {
	co, err := codeowners.Parse([]byte("* @alice\n/secure/ @acme/security\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := baseFacts()
	f.CodeOwners = co
	f.Files = []ChangedFile{{Path: "lib/x.go", Previous: "secure/x.go"}}
	f.Reviews = []RuleReview{approved(10, alice, head)}
	r := contract.ApprovalRule{Name: "owners", Requires: contract.RuleRequires{Count: 1, CodeOwners: true}, Options: contract.RuleOptions{InvalidateOnPush: true}}
	d := eval(t, rules(r), f)
	if d.Satisfied || len(d.Rules[0].Unowned) != 1 || d.Rules[0].Unowned[0].Path != "secure/x.go" {
		t.Fatalf("%+v", d.Rules[0])
	}
	if !strings.Contains(d.Pending(), "code owners of secure/x.go") || !strings.Contains(d.Pending(), "@acme/security") {
		t.Fatalf("pending %q", d.Pending())
	}
	f.Reviews = append(f.Reviews, approved(11, carol, head))
	d = eval(t, rules(r), f)
	if !d.Satisfied {
		t.Fatalf("%+v", d.Rules[0])
	}
	if c := d.Credits[11]; len(c) != 1 || c[0].Via != ViaCodeOwner || strings.Join(c[0].Paths, ",") != "secure/x.go" {
		t.Fatalf("credits %+v", d.Credits)
	}
}

// Hostile: a disapproval blocks until dismissed, then no longer.
func TestDisapprovalDismissed(t *testing.T) {
	f := baseFacts()
	a := rules(teamRule("backend"))
	a.Disapproval = &contract.Disapproval{Teams: []string{"acme/security"}}
	f.Reviews = []RuleReview{approved(10, alice, head), {ID: 11, Reviewer: carol, State: ReviewChangesRequested, Commit: head}}
	d := eval(t, a, f)
	if d.Satisfied || len(d.Blocks) != 1 || d.Blocks[0].Team != "acme/security" {
		t.Fatalf("%+v", d)
	}
	f.Reviews[1].State = ReviewDismissed
	if d := eval(t, a, f); !d.Satisfied || len(d.Blocks) != 0 {
		t.Fatalf("dismissed still blocks: %+v", d)
	}
	// a non-member's change request is not a disapproval
	f.Reviews[1] = RuleReview{ID: 12, Reviewer: bob, State: ReviewChangesRequested, Commit: head}
	if d := eval(t, a, f); !d.Satisfied {
		t.Fatalf("%+v", d)
	}
}

func TestAuthorAndContributors(t *testing.T) {
	f := baseFacts()
	f.Teams["acme/backend"]["dave"] = true
	f.Contributors = []Account{bob}
	f.Teams["acme/backend"]["bob"] = true
	f.Reviews = []RuleReview{approved(10, dave, head), approved(11, bob, head)}
	d := eval(t, rules(teamRule("backend")), f)
	if d.Satisfied || miss(t, d, "backend", 10) != MissAuthor || miss(t, d, "backend", 11) != MissContributor {
		t.Fatalf("%+v", d)
	}
	r := teamRule("backend")
	r.Options.AllowAuthor = true
	if !eval(t, rules(r), f).Satisfied {
		t.Fatal("allow_author")
	}
}

func TestConditions(t *testing.T) {
	yes := true
	f := baseFacts()
	f.Title, f.Labels = "feat: x", []string{"risky"}
	for name, c := range map[string]struct {
		cond contract.RuleIf
		want bool
	}{
		"base branch":    {contract.RuleIf{BaseBranch: []string{"release"}}, false},
		"base branch ok": {contract.RuleIf{BaseBranch: []string{"main"}}, true},
		"author":         {contract.RuleIf{AuthorIs: []string{"DAVE"}}, true},
		"author team":    {contract.RuleIf{AuthorInTeam: []string{"acme/backend"}}, false},
		"labels":         {contract.RuleIf{Labels: []string{"risky", "other"}}, false},
		"title":          {contract.RuleIf{TitleMatches: "^feat"}, true},
		"agent session":  {contract.RuleIf{FromAgentSession: &yes}, false},
	} {
		r := teamRule("r")
		r.If = c.cond
		if got := eval(t, rules(r), f).Applied; got != c.want {
			t.Errorf("%s: applied %v", name, got)
		}
	}
}
