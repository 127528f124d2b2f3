package action

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/testimage"
)

// slowDockerContract: a sandboxed check that takes 6 s, so a review job
// that re-ran it could not finish within the fast path's goal.
const slowDockerContract = `version: 1
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
  - id: slow
    run: [/bin/helper, sleep, "6"]
  - id: readme
    run: [/bin/helper, cat, /workspace/README.md]
approval: {required: 1, roles: [write, maintain, admin]}
`

// TestE2EReviewFastPath: the pull_request job (the action image) hands off
// its run; the pull_request_review job, in a new checkout with an empty
// state directory, imports it and completes with an uploaded bundle
// without re-running the 6 s check. Its wall time, from `docker run` to
// exit, is the review-to-bundle figure (goal ≤ 10 s).
func TestE2EReviewFastPath(t *testing.T) {
	image := e2eImage(t)
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixtureBase(t, strings.Replace(slowDockerContract, "IMAGE", helper, 1), nil, nil)
	fx.env["GITHUB_RUN_ID"] = "99"
	fx.prEvent()
	start := time.Now()
	wantCode(t, fx, fx.dockerRun(image), ExitAwaiting)
	prTook := time.Since(start)
	if _, ok := fx.gh.Uploaded(RunArtifactPrefix + fx.head); !ok {
		t.Fatalf("no hand-off uploaded\n%s", fx.log.String())
	}
	if sts := fx.gh.Statuses(owner, repo, fx.head); len(sts) == 0 || sts[len(sts)-1].State != "pending" {
		t.Fatalf("status after the PR job: %+v", sts)
	}

	took := fx.reviewFastPath(image, "slow")
	t.Logf("FASTPATH pull_request job %s; review job start to COMPLETE + uploaded bundle %s", prTook.Round(time.Millisecond), took.Round(time.Millisecond))
	if took > 10*time.Second || took >= prTook {
		t.Fatalf("review job took %s (PR job %s): goal ≤ 10 s and independent of the checks", took, prTook)
	}
}

// reviewFastPath approves the PR head as bob and runs the review job in a
// fresh checkout of the test merge, through the action image; it wants the
// job to import the pull_request job's run (fast path: check not re-run),
// end COMPLETE with its bundle uploaded and the status flipped to success,
// and returns the review job's wall time.
func (fx *fixture) reviewFastPath(image, check string) time.Duration {
	t := fx.t
	t.Helper()
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	ws := filepath.Join(t.TempDir(), "ws")
	git(t, fx.tmp, "clone", "-q", fx.ws, ws)
	git(t, ws, "checkout", "-q", "--detach", fx.merge)
	fx.ws, fx.env["GITHUB_WORKSPACE"] = ws, ws
	start := time.Now()
	wantCode(t, fx, fx.dockerRun(image), ExitOK)
	took := time.Since(start)
	log := fx.log.String()
	if !strings.Contains(log, "checks not re-run") || strings.Contains(log, "check "+check+": passed") {
		t.Fatalf("the review job did not take the fast path:\n%s", log)
	}
	if out := fx.outputs(); out["state"] != "COMPLETE" || out["artifact-id"] == "" {
		t.Fatalf("outputs %v\n%s", out, log)
	}
	if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); !ok {
		t.Fatal("no bundle uploaded")
	}
	if sts := fx.gh.Statuses(owner, repo, fx.head); sts[len(sts)-1].State != "success" {
		t.Fatalf("final status %+v", sts)
	}
	return took
}
