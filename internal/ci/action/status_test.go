package action

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/githubtest"
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
