package review_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/contract"
)

func teamRules(opts contract.RuleOptions, rs ...contract.ApprovalRule) contract.Approval {
	a := contract.Approval{Required: 1, Roles: []string{"write", "maintain", "admin"}, Mode: contract.ModeAnd}
	if len(rs) == 0 {
		opts.InvalidateOnPush = true
		rs = []contract.ApprovalRule{{Name: "backend", If: contract.RuleIf{ChangedFiles: &contract.ChangedFiles{Paths: []string{"src/**"}}},
			Requires: contract.RuleRequires{Count: 1, Teams: []string{"acme/backend"}}, Options: opts}}
	}
	a.Rules = rs
	return a
}

func ownersRule() contract.Approval {
	return teamRules(contract.RuleOptions{}, contract.ApprovalRule{Name: "owners",
		Requires: contract.RuleRequires{Count: 1, CodeOwners: true}, Options: contract.RuleOptions{InvalidateOnPush: true}})
}

func (f *fixture) rulesSetup() {
	f.srv.AddFile(owner, repo, prNum, githubtest.File{Filename: "src/a.go", SHA: "a1"})
	f.srv.AddTeam(owner, "backend")
	f.srv.SetTeamMember(owner, "backend", bob.Login, "active")
	f.srv.SetTeamMember(owner, "backend", dave.Login, "pending")
}

func ruleMiss(d review.Decision, rule string, login string) approval.MissReason {
	if d.Rules == nil {
		return ""
	}
	for _, r := range d.Rules.Rules {
		if r.Name == rule {
			for _, m := range r.Misses {
				if m.Login == login {
					return m.Reason
				}
			}
		}
	}
	return ""
}

func TestRulesTeamApproves(t *testing.T) {
	f := setup(t)
	f.rulesSetup()
	f.review(bob, "APPROVED", head)
	d, err := f.decide(teamRules(contract.RuleOptions{}))
	if err != nil || !d.Satisfied || len(d.Counted) != 1 {
		t.Fatalf("%v %+v", err, d)
	}
	if c := d.Counted[0].Rules; len(c) != 1 || c[0].Via != approval.ViaTeam || c[0].Team != "acme/backend" {
		t.Fatalf("credits %+v", c)
	}
	// a pending member does not count
	f2 := setup(t)
	f2.rulesSetup()
	f2.review(dave, "APPROVED", head)
	d, _ = f2.decide(teamRules(contract.RuleOptions{}))
	if d.Satisfied || ruleMiss(d, "backend", "dave") != approval.MissNotQualified {
		t.Fatalf("pending member counted: %+v", d.Rules)
	}
}

// Hostile: a team member approving an older commit.
func TestRulesTeamMemberOlderCommit(t *testing.T) {
	f := setup(t)
	f.rulesSetup()
	f.review(bob, "APPROVED", old)
	d, err := f.decide(teamRules(contract.RuleOptions{}))
	if err != nil || d.Satisfied || ruleMiss(d, "backend", "bob") != approval.MissStaleCommit {
		t.Fatalf("%v %+v", err, d.Rules)
	}
	if !strings.Contains(d.Summary, "waiting for: backend (0 of 1; @acme/backend)") {
		t.Fatalf("summary %q", d.Summary)
	}
}

// Hostile: an approver removed from the team before evaluation.
func TestRulesRemovedFromTeam(t *testing.T) {
	f := setup(t)
	f.rulesSetup()
	f.review(bob, "APPROVED", head)
	f.srv.SetTeamMember(owner, "backend", bob.Login, "")
	d, err := f.decide(teamRules(contract.RuleOptions{}))
	if err != nil || d.Satisfied || ruleMiss(d, "backend", "bob") != approval.MissNotQualified {
		t.Fatalf("%v %+v", err, d.Rules)
	}
}

// Hostile: team API errors fail closed and name the team.
func TestRulesTeamAPIErrors(t *testing.T) {
	f := setup(t)
	f.rulesSetup()
	f.review(bob, "APPROVED", head)
	f.srv.Fail("/teams/backend/memberships/", 403, "", -1)
	d, err := f.decide(teamRules(contract.RuleOptions{}))
	var te *review.TeamError
	if !errors.As(err, &te) || te.Team != "acme/backend" || d.Satisfied || !strings.Contains(err.Error(), "acme/backend") {
		t.Fatalf("%v %+v", err, d)
	}
	// an unknown team
	g := setup(t)
	g.rulesSetup()
	g.review(bob, "APPROVED", head)
	rule := teamRules(contract.RuleOptions{})
	rule.Rules[0].Requires.Teams = []string{"acme/nosuch"}
	d, err = g.decide(rule)
	if !errors.As(err, &te) || !errors.Is(err, review.ErrTeamNotFound) || te.Team != "acme/nosuch" || d.Satisfied {
		t.Fatalf("%v %+v", err, d)
	}
}

// Hostile: a rule that matches no file is not applicable and never passes
// silently: the base requirement decides, here with no approval at all.
func TestRulesMatchingNoFile(t *testing.T) {
	f := setup(t)
	f.rulesSetup()
	rule := teamRules(contract.RuleOptions{})
	rule.Rules[0].If.ChangedFiles.Paths = []string{"docs/**"}
	d, err := f.decide(rule)
	if err != nil || d.Satisfied || d.Rules == nil || d.Rules.Applied || d.Rules.Rules[0].NotApplicable == "" || d.Missing != 1 {
		t.Fatalf("%v %+v %+v", err, d, d.Rules)
	}
}

// Hostile: 100+ changed files are read through every page; the rule
// applies because of a file on the second page.
func TestRulesManyFiles(t *testing.T) {
	f := setup(t)
	for i := range 150 {
		name := fmt.Sprintf("other/f%03d.txt", i)
		if i == 140 {
			name = "src/late.go"
		}
		f.srv.AddFile(owner, repo, prNum, githubtest.File{Filename: name, SHA: "x"})
	}
	f.srv.AddTeam(owner, "backend")
	f.srv.SetTeamMember(owner, "backend", bob.Login, "active")
	f.review(erin, "APPROVED", head) // write, not in the team
	d, err := f.decide(teamRules(contract.RuleOptions{}))
	if err != nil || d.Rules == nil || !d.Rules.Applied || d.Satisfied {
		t.Fatalf("%v %+v", err, d.Rules)
	}
	if n := f.srv.Count("GET", "/pulls/7/files"); n != 2 {
		t.Fatalf("%d file pages read, want 2", n)
	}
}

// Hostile: a CODEOWNERS file edited by the pull request does not govern:
// the base commit's does.
func TestRulesCodeOwnersFromBase(t *testing.T) {
	f := setup(t)
	f.srv.AddFile(owner, repo, prNum, githubtest.File{Filename: "secure/key.go", SHA: "k"})
	f.srv.AddFile(owner, repo, prNum, githubtest.File{Filename: ".github/CODEOWNERS", SHA: "c"})
	f.srv.SetContent(owner, repo, base, ".github/CODEOWNERS", []byte("/secure/ @dave\n"))
	f.srv.SetContent(owner, repo, head, ".github/CODEOWNERS", []byte("* @bob\n"))
	f.review(bob, "APPROVED", head)
	d, err := f.decide(ownersRule())
	if err != nil || d.Satisfied || len(d.Rules.Rules[0].Unowned) != 1 || d.Rules.Rules[0].Unowned[0].Owners[0] != "@dave" {
		t.Fatalf("%v %+v", err, d.Rules)
	}
	f.review(dave, "APPROVED", head)
	d, err = f.decide(ownersRule())
	if err != nil || !d.Satisfied {
		t.Fatalf("%v %+v", err, d.Rules)
	}
}

// Hostile: a renamed file moving out of an owned path needs the owners of
// the path it left.
func TestRulesRenameOutOfOwnedPath(t *testing.T) {
	f := setup(t)
	f.srv.AddFile(owner, repo, prNum, githubtest.File{Filename: "lib/key.go", PreviousFilename: "secure/key.go", SHA: "k"})
	f.srv.SetContent(owner, repo, base, "CODEOWNERS", []byte("/secure/ @dave\n"))
	f.review(bob, "APPROVED", head)
	d, err := f.decide(ownersRule())
	if err != nil || d.Satisfied || len(d.Rules.Rules[0].Unowned) != 1 || d.Rules.Rules[0].Unowned[0].Path != "secure/key.go" {
		t.Fatalf("%v %+v", err, d.Rules)
	}
}

// Hostile: a disapproval blocks until the review is dismissed.
func TestRulesDisapprovalDismissed(t *testing.T) {
	f := setup(t)
	f.rulesSetup()
	f.srv.AddTeam(owner, "security")
	f.srv.SetTeamMember(owner, "security", erin.Login, "active")
	rule := teamRules(contract.RuleOptions{})
	rule.Roles = []string{"admin"} // erin's change request does not block as a base blocker
	rule.Disapproval = &contract.Disapproval{Teams: []string{"acme/security"}}
	f.review(bob, "APPROVED", head)
	id := f.review(erin, "CHANGES_REQUESTED", head)
	d, err := f.decide(rule)
	if err != nil || d.Satisfied || len(d.Rules.Blocks) != 1 || d.Rules.Blocks[0].Login != "erin" {
		t.Fatalf("%v %+v", err, d.Rules)
	}
	f.srv.DismissReview(owner, repo, prNum, id)
	d, err = f.decide(rule)
	if err != nil || !d.Satisfied {
		t.Fatalf("dismissed still blocks: %v %+v", err, d)
	}
}

const merge1, baseTip = "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"

// updateMerge sets up head = merge(old, baseTip) and the comparisons
// that prove or disprove it; extra is a file the merge changes beyond
// the base's.
func (f *fixture) updateMerge(extra bool) {
	f.srv.AddCompare(owner, repo, baseTip, "main", githubtest.Compare{Status: "identical"})
	stepFiles := []githubtest.File{{Filename: "README.md", SHA: "r2"}}
	if extra {
		stepFiles = append(stepFiles, githubtest.File{Filename: "src/a.go", SHA: "evil"})
	}
	f.srv.AddCompare(owner, repo, old, head, githubtest.Compare{Status: "ahead", AheadBy: 1,
		Commits: []githubtest.CompareCommit{{SHA: head, Parents: []string{old, baseTip}}}, Files: stepFiles})
	f.srv.AddCompare(owner, repo, old, baseTip, githubtest.Compare{Status: "diverged", Files: []githubtest.File{{Filename: "README.md", SHA: "r2"}}})
}

// Hostile: ignore_update_merges keeps an approval across a proven update
// merge, and drops it when the merge also changes a file.
func TestRulesIgnoreUpdateMerges(t *testing.T) {
	for _, extra := range []bool{false, true} {
		f := setup(t)
		f.rulesSetup()
		f.updateMerge(extra)
		f.review(bob, "APPROVED", old)
		d, err := f.decide(teamRules(contract.RuleOptions{IgnoreUpdateMerges: true}))
		if err != nil {
			t.Fatal(err)
		}
		if !extra && (!d.Satisfied || len(d.Counted) != 1 || d.Counted[0].Commit != old) {
			t.Fatalf("proven update merge: %+v %+v", d, d.Rules)
		}
		if extra && (d.Satisfied || ruleMiss(d, "backend", "bob") != approval.MissStaleCommit || !strings.Contains(d.NotKept[old], "changes src/a.go beyond")) {
			t.Fatalf("merge that changes a file kept the approval: %+v", d.Rules)
		}
	}
}

// Rules are never evaluated on facts that were not fetched.
func TestRulesUnfetchedFactsRefused(t *testing.T) {
	in := review.Input{Head: head, Rule: teamRules(contract.RuleOptions{}), Reviews: []review.Review{{ID: 1, User: review.User{Login: "bob", ID: 2}, State: "APPROVED", CommitID: head}},
		Permissions: map[int64]review.Permission{2: {Permission: "write"}}}
	in.Rule.Rules[0].If = contract.RuleIf{}
	in.Rule.Rules[0].Requires = contract.RuleRequires{Count: 1, Permissions: []string{"write"}}
	d := review.Evaluate(in)
	if d.Satisfied || !strings.Contains(d.RulesError, "not fetched") {
		t.Fatalf("%+v", d)
	}
}
