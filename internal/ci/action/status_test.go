package action

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
)

func TestStatusFlipsPendingToSuccess(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.env["GITHUB_RUN_ID"] = "4242"
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	sts := fx.gh.Statuses(owner, repo, fx.head)
	if len(sts) != 2 {
		t.Fatalf("statuses on the head: %+v", sts)
	}
	wantURL := fx.gh.URL + "/" + owner + "/" + repo + "/actions/runs/4242"
	last := sts[1]
	if sts[0].State != "pending" || last.State != "pending" || last.Context != "proofgate" || last.TargetURL != wantURL ||
		!strings.Contains(last.Description, "waiting for: 1 approval by write/maintain/admin") {
		t.Fatalf("pending status: %+v", sts)
	}
	if len(fx.gh.Statuses(owner, repo, fx.merge)) != 0 {
		t.Fatal("a status was posted on the test merge commit, not the PR head")
	}
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	sts = fx.gh.Statuses(owner, repo, fx.head)
	if got := sts[len(sts)-1]; got.State != "success" || res.StatusPosted != "success" {
		t.Fatalf("final status: %+v", sts)
	}
}

func TestStatusFailureOnBlocked(t *testing.T) {
	fx := newFixture(t, processContract, map[string]string{"FORBIDDEN": "x"})
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitRefused, err, fx.log.String())
	sts := fx.gh.Statuses(owner, repo, fx.head)
	if len(sts) == 0 || sts[len(sts)-1].State != "failure" || !strings.Contains(sts[len(sts)-1].Description, "BLOCKED") {
		t.Fatalf("statuses: %+v (state %s)", sts, res.State)
	}
}

func TestCheckRunMode(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.env["INPUT_STATUS"] = "check-run"
	fx.env["GITHUB_RUN_ID"] = "7"
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	crs := fx.gh.CheckRuns(owner, repo, fx.head)
	if len(crs) != 2 || crs[1].Status != "in_progress" || crs[1].Name != "proofgate" || !strings.Contains(crs[1].Summary, "waiting for:") ||
		!strings.HasSuffix(crs[1].DetailsURL, "/actions/runs/7") {
		t.Fatalf("check runs: %+v", crs)
	}
	if len(fx.gh.Statuses(owner, repo, fx.head)) != 0 {
		t.Fatal("check-run mode posted a commit status")
	}
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	crs = fx.gh.CheckRuns(owner, repo, fx.head)
	if c := crs[len(crs)-1]; c.Status != "completed" || c.Conclusion != "success" {
		t.Fatalf("final check run: %+v", c)
	}
}

// A token without the permission: a warning naming it, the job's outcome
// and evidence unchanged.
func TestStatusPermissionDenied(t *testing.T) {
	for _, tc := range []struct{ mode, perm, deny string }{{"status", "statuses: write", "statuses"}, {"check-run", "checks: write", "checks"}} {
		t.Run(tc.mode, func(t *testing.T) {
			fx := newFixture(t, processContract, nil)
			fx.env["INPUT_STATUS"] = tc.mode
			fx.gh.Deny(tc.deny)
			fx.prEvent()
			res, err := fx.run()
			mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
			if res.State != replay.AwaitingApproval || res.StatusPosted != "" {
				t.Fatalf("result: %+v", res)
			}
			if !strings.Contains(fx.log.String(), "::warning title=ProofGate status not posted::") || !strings.Contains(fx.log.String(), tc.perm) {
				t.Fatalf("no warning naming %s:\n%s", tc.perm, fx.log.String())
			}
		})
	}
}

func TestStatusNoneAndBadInput(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.env["INPUT_STATUS"] = "none"
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if n := fx.gh.Count("POST", "/statuses/") + fx.gh.Count("POST", "/check-runs"); n != 0 {
		t.Fatalf("status none posted %d times", n)
	}
	fx.env["INPUT_STATUS"] = "commit"
	res, err = fx.run()
	mustCode(t, res.Code, ExitUsage, err, fx.log.String())
	if !strings.Contains(err.Error(), "input status") {
		t.Fatalf("error does not name the input: %v", err)
	}
}

func TestClipDescription(t *testing.T) {
	long := strings.Repeat("é", 200) + "\x1b[31m"
	got := ClipDescription(long)
	if n := utf8.RuneCountInString(got); n != MaxStatusDescription || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("clipped to %d runes: %q", n, got)
	}
	if strings.ContainsRune(ClipDescription("a\x1b[31mb\nc"), 0x1b) {
		t.Fatal("an escape reached the description")
	}
	w := WaitingFor(contract.Approval{Required: 2, Roles: []string{"admin"}})
	if w != "waiting for: 2 approvals by admin" {
		t.Fatalf("WaitingFor: %q", w)
	}
	// The fake refuses a description over 140 characters as GitHub does:
	// a long rule text still posts once clipped.
	fx := newFixture(t, processContract, nil)
	if err := PostStatus(t.Context(), ghClient(t, fx), StatusModeCommit, owner, repo, fx.head, StatusReport{State: "pending", Description: long}); err != nil {
		t.Fatal(err)
	}
	if err := PostStatus(t.Context(), ghClient(t, fx), StatusModeCommit, owner, repo, fx.head, StatusReport{State: "waiting"}); err == nil {
		t.Fatal("the fake accepted a state outside the enum")
	}
}

func ghClient(t *testing.T, fx *fixture) *github.Client {
	t.Helper()
	c, err := ghapi.NewClient(t.Context(), fx.gh.Token, fx.gh.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRunURL(t *testing.T) {
	env := map[string]string{"GITHUB_SERVER_URL": "https://ghe.example/", "GITHUB_REPOSITORY": "acme/widget", "GITHUB_RUN_ID": "12", "GITHUB_RUN_ATTEMPT": "2"}
	get := func(k string) string { return env[k] }
	if u := RunURL(get); u != "https://ghe.example/acme/widget/actions/runs/12/attempts/2" {
		t.Fatalf("RunURL %q", u)
	}
	env["GITHUB_RUN_ID"] = "12/../../x"
	if u := RunURL(get); u != "" {
		t.Fatalf("RunURL of a hostile run id: %q", u)
	}
	delete(env, "GITHUB_RUN_ID")
	if u := RunURL(get); u != "" {
		t.Fatalf("RunURL without a run id: %q", u)
	}
}
