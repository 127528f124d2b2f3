package action

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/replay"
)

// rulesApproval: a team rule scoped to the changed file, a code-owners
// rule and a rule that matches no file.
const rulesApproval = `approval:
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

const rulesContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 30s
checks:
  - id: readme
    run: [test, -f, README.md]
` + rulesApproval

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
	if res.State != replay.AwaitingApproval || res.Recorded != 0 {
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
	if res.State != replay.Complete || res.Recorded != 1 {
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

const twoRulesContract = `version: 1
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
      requires: {teams: [acme/backend]}
    - name: design
      requires: {users: [dave]}
    - name: security
      if: {changed_files: {paths: ["secret/**"]}}
      requires: {users: [nobody]}
`

// Two rules satisfied by two different people while approval.required is
// 1: both approvals are recorded (the first held, the second completes),
// so the release gate accepts --require-rule of either rule and of both,
// and still refuses the rule nobody satisfied.
func TestRulesEveryCreditRecorded(t *testing.T) {
	fx := newFixtureBase(t, twoRulesContract, nil, nil)
	fx.gh.AddFile(owner, repo, prNum, githubtest.File{Filename: "feature.txt", Status: "added", SHA: "f1"})
	fx.gh.AddTeam("acme", "backend")
	fx.gh.SetTeamMember("acme", "backend", "bob", "active")
	fx.gh.SetPermission(owner, repo, "dave", githubtest.Permission{Permission: "write"})
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: githubtest.User{Login: "dave", ID: 44}, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != replay.Complete || res.Recorded != 2 {
		t.Fatalf("want both credited approvals recorded: %+v\n%s", res, fx.log.String())
	}
	rep, err := run.Audit(filepath.Join(fx.ws, ".proofgate", "runs", res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	credited := map[string]string{}
	for _, d := range rep.Decisions {
		for _, c := range d.GitHub.Rules {
			credited[c.Rule] = d.GitHub.Login
		}
	}
	if len(rep.Decisions) != 2 || credited["backend"] != "bob" || credited["design"] != "dave" || len(credited) != 2 {
		t.Fatalf("decisions credit %v", credited)
	}
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", fx.release()
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	for _, rules := range []string{"backend", "design", "backend, design"} {
		fx.env["INPUT_REQUIRE-RULE"] = rules
		vr, err := fx.verify()
		mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	}
	fx.env["INPUT_REQUIRE-RULE"] = "security"
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != "rule-not-satisfied" {
		t.Fatalf("require-rule security: %+v", vr)
	}
}

// rulesDockerContract: path- and team-based rules and CODEOWNERS, checks
// sandboxed in the helper image (the action image has no shell).
const rulesDockerContract = `version: 1
name: widget
defaults:
  runtime: docker
  image: IMAGE
  pull: never
  timeout: 60s
  network: none
  workspace: readonly
  resources: {memory: 128MiB, cpus: 1, pids: 64}
checks:
  - id: readme
    run: [/bin/helper, cat, /workspace/README.md]
` + rulesApproval

// TestE2ERulesActionImage runs the rules through the action image as the
// runner runs it: the pull_request job posts a pending status naming the
// rules it waits for and hands off its run; a review by a member of the
// team that owns the changed path starts a review job in a fresh checkout,
// which imports the run (fast path), completes it, uploads the bundle and
// flips the status to success. The review job's wall time is the
// review-to-bundle figure (line RULES-E2E).
func TestE2ERulesActionImage(t *testing.T) {
	image := e2eImage(t)
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := strings.Replace(rulesDockerContract, "IMAGE", helper, 1)
	fx := newFixtureBase(t, c, map[string]string{".github/CODEOWNERS": "* @acme/backend\n"}, nil)
	fx.gh.AddFile(owner, repo, prNum, githubtest.File{Filename: "feature.txt", Status: "added", SHA: "f1"})
	fx.gh.SetContent(owner, repo, fx.base, ".github/CODEOWNERS", []byte("* @acme/backend\n"))
	fx.gh.AddTeam("acme", "backend")
	fx.gh.SetTeamMember("acme", "backend", "bob", "active")
	fx.env["GITHUB_RUN_ID"] = "99"

	fx.prEvent()
	start := time.Now()
	wantCode(t, fx, fx.dockerRun(image), ExitAwaiting)
	prTook := time.Since(start)
	sts := fx.gh.Statuses(owner, repo, fx.head)
	if len(sts) == 0 || sts[len(sts)-1].State != "pending" || !strings.Contains(sts[len(sts)-1].Description, "waiting for: backend (0 of 1") {
		t.Fatalf("the pending status does not name the waiting rules: %+v\n%s", sts, fx.log.String())
	}
	if _, ok := fx.gh.Uploaded(RunArtifactPrefix + fx.head); !ok {
		t.Fatalf("no hand-off uploaded\n%s", fx.log.String())
	}

	took := fx.reviewFastPath(image, "readme")
	if s := strings.ReplaceAll(fx.summary(), `\`, ""); !strings.Contains(s, "approval rules met") {
		t.Fatalf("summary:\n%s", s)
	}
	t.Logf("RULES-E2E: pull_request job %s; review (team member, code owner) to COMPLETE + uploaded bundle %s", prTook.Round(time.Millisecond), took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Fatalf("review job took %s: goal ≤ 10 s", took)
	}
}
