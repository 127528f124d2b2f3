package action

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/run"
)

const rulesContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 30s
checks:
  - id: readme
    run: [test, -f, README.md]
approval:
  required: 1
  roles: [write, maintain, admin]
  rules:
    - name: backend
      if: {changed_files: {paths: ["feature.txt", "src/**"]}}
      requires: {teams: [acme/backend]}
    - name: owners
      requires: {code_owners: true}
    - name: docs
      if: {changed_files: {paths: ["docs/**"]}}
      requires: {users: [nobody]}
`

// TestRulesEndToEnd: a contract with a team rule, a code-owners rule and
// a rule that matches no file gates a pull request through the action: a
// reviewer outside the team leaves it pending naming the rule and who may
// approve; a team member who owns the path completes it; the recorded
// decision credits both applicable rules; the release gate requires a
// named rule and refuses one the approval did not satisfy.
func TestRulesEndToEnd(t *testing.T) {
	fx := newFixtureBase(t, rulesContract, map[string]string{".github/CODEOWNERS": "* @acme/backend\n"}, nil)
	fx.gh.AddFile(owner, repo, prNum, githubtest.File{Filename: "feature.txt", Status: "added", SHA: "f1"})
	fx.gh.SetContent(owner, repo, fx.base, ".github/CODEOWNERS", []byte("* @acme/backend\n"))
	fx.gh.AddTeam("acme", "backend")
	fx.gh.SetTeamMember("acme", "backend", "bob", "active")
	fx.gh.SetPermission(owner, repo, "dave", githubtest.Permission{Permission: "write"})

	dave := githubtest.User{Login: "dave", ID: 44}
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: dave, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if res.State != run.AwaitingApproval || res.Recorded != 0 {
		t.Fatalf("%+v", res)
	}
	if s := strings.ReplaceAll(fx.summary(), `\`, ""); !strings.Contains(s, "waiting for: backend (0 of 1; @acme/backend), owners (0 of 1, code owners of feature.txt; @acme/backend)") || !strings.Contains(s, "not_credited") && !strings.Contains(s, "dave") {
		t.Fatalf("summary does not say what waits:\n%s", s)
	}
	sts := fx.gh.Statuses(owner, repo, fx.head)
	if len(sts) == 0 || sts[len(sts)-1].State != "pending" || !strings.Contains(sts[len(sts)-1].Description, "waiting for: backend (0 of 1") {
		t.Fatalf("the pending status does not name the waiting rules: %+v", sts)
	}

	id = fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != run.Complete || res.Recorded != 1 {
		t.Fatalf("%+v", res)
	}
	rep, err := run.Audit(filepath.Join(fx.ws, ".proofgate", "runs", res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Decisions[0].GitHub
	if g == nil || g.Login != "bob" || len(g.Rules) != 2 {
		t.Fatalf("decision: %+v", g)
	}
	want := map[string]approval.Credit{"backend": {Rule: "backend", Via: approval.ViaTeam, Team: "acme/backend"}}
	if c := g.Rules[0]; c.Rule != "backend" || c.Via != want["backend"].Via || c.Team != "acme/backend" {
		t.Fatalf("credit %+v", c)
	}
	if c := g.Rules[1]; c.Rule != "owners" || c.Via != approval.ViaCodeOwner || strings.Join(c.Paths, ",") != "feature.txt" {
		t.Fatalf("credit %+v", c)
	}

	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_REQUIRE-RULE"] = "backend, owners"
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	fx.env["INPUT_REQUIRE-RULE"] = "docs"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != "rule-not-satisfied" {
		t.Fatalf("require-rule docs: %+v", vr)
	}
	fx.env["INPUT_REQUIRE-RULE"] = "Not A Rule"
	vr, _ = fx.verify()
	if vr.Code == ExitOK {
		t.Fatalf("a bad rule name was accepted: %+v", vr)
	}
}
