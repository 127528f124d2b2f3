package action

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// queueFixture: the PR approved on its head, and the queue's merge commit
// (a new commit on main with the tested tree) checked out.
func queueFixture(t *testing.T) (*fixture, string) {
	fx := newFixture(t, processContract, nil)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	q := fx.release()
	git(t, fx.ws, "checkout", "-q", "--detach", q)
	fx.env["GITHUB_SHA"] = q
	fx.env["GITHUB_REF"] = "refs/heads/gh-readonly-queue/main/pr-7-" + fx.base
	fx.gh.SetRun(owner, repo, q)
	fx.gh.SetGitRepo(owner, repo, fx.ws)
	return fx, q
}

func (fx *fixture) mergeGroupEvent(g githubtest.MergeGroup) {
	fx.t.Helper()
	if g.BaseSHA == "" {
		g.BaseSHA = fx.base
	}
	g.BaseBranch = "main"
	if g.Tree == "" {
		g.Tree = git(fx.t, fx.ws, "rev-parse", g.HeadSHA+"^{tree}")
	}
	p, err := fx.gh.WriteMergeGroupEvent(fx.wf, owner, repo, g)
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.env["GITHUB_EVENT_NAME"] = "merge_group"
	fx.env["GITHUB_EVENT_PATH"] = p
}

func TestMergeGroupBundleOnQueueCommit(t *testing.T) {
	fx, q := queueFixture(t)
	fx.mergeGroupEvent(githubtest.MergeGroup{HeadSHA: q, PR: prNum})
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != replay.Complete || res.Recorded != 1 || res.ArtifactName != ArtifactPrefix+q {
		t.Fatalf("merge group run: %+v\n%s", res, fx.log.String())
	}
	rep, err := run.Audit(fx.ws + "/.proofgate/runs/" + res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Source.Commit != q || rep.Decisions[0].GitHub.PullRequest != prNum || rep.Decisions[0].GitHub.Commit != fx.head {
		t.Fatalf("source %+v decision %+v", rep.Source, rep.Decisions[0].GitHub)
	}
	if sts := fx.gh.Statuses(owner, repo, q); len(sts) == 0 || sts[len(sts)-1].State != "success" {
		t.Fatalf("status on the queue commit: %+v", sts)
	}
	// The tag release of the queue's commit (what main fast-forwards to)
	// verifies with match: commit as well as tree.
	for _, m := range []string{"commit", "tree"} {
		fx.env["GITHUB_EVENT_NAME"], fx.env["INPUT_COMMIT"], fx.env["INPUT_MATCH"], fx.env["INPUT_TRUST-STORE"] = "push", q, m, fx.trust
		vr, err := fx.verify()
		mustCode(t, vr.Code, ExitOK, err, fx.log.String())
		if vr.RunID != res.RunID {
			t.Fatalf("match %s accepted run %s, want %s", m, vr.RunID, res.RunID)
		}
	}
}

func TestMergeGroupWithoutLinkStaysPending(t *testing.T) {
	for _, tc := range []struct {
		name  string
		g     func(q string) githubtest.MergeGroup
		setup func(fx *fixture)
		want  string
	}{
		{"no PR in head_ref", func(q string) githubtest.MergeGroup { return githubtest.MergeGroup{HeadSHA: q} }, nil, "names no pull request"},
		{"PR for another base in head_ref", func(q string) githubtest.MergeGroup {
			return githubtest.MergeGroup{HeadSHA: q, HeadRef: "refs/heads/gh-readonly-queue/release/pr-7-" + strings.Repeat("a", 40)}
		}, nil, "names no pull request"},
		{"closed PR", func(q string) githubtest.MergeGroup { return githubtest.MergeGroup{HeadSHA: q, PR: prNum} },
			func(fx *fixture) { fx.gh.ClosePR(owner, repo, prNum) }, "approval cannot be linked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx, q := queueFixture(t)
			if tc.setup != nil {
				tc.setup(fx)
			}
			fx.mergeGroupEvent(tc.g(q))
			res, err := fx.run()
			mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
			if res.State != replay.AwaitingApproval || res.Recorded != 0 || !strings.Contains(fx.summary(), tc.want) {
				t.Fatalf("%+v\n%s", res, fx.summary())
			}
			if _, ok := fx.gh.Uploaded(ArtifactPrefix + q); ok {
				t.Fatal("a bundle was uploaded without a linked approval")
			}
		})
	}
}

func TestMergeGroupCheckoutMustBeQueueCommit(t *testing.T) {
	fx, q := queueFixture(t)
	git(t, fx.ws, "checkout", "-q", "--detach", fx.merge)
	fx.mergeGroupEvent(githubtest.MergeGroup{HeadSHA: q, PR: prNum, Tree: git(t, fx.ws, "rev-parse", q+"^{tree}")})
	res, err := fx.run()
	mustCode(t, res.Code, ExitUsage, err, fx.log.String())
	if !strings.Contains(err.Error(), "not the queue's merge commit") {
		t.Fatal(err)
	}
}
