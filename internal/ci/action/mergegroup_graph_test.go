package action

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/replay"
)

// queueCommit makes a commit with tree on parents and checks it out as the
// merge group's head.
func (fx *fixture) queueCommit(tree string, parents ...string) string {
	fx.t.Helper()
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	q := git(fx.t, fx.ws, append(args, "-m", "queue")...)
	git(fx.t, fx.ws, "checkout", "-q", "--detach", q)
	fx.env["GITHUB_SHA"] = q
	return q
}

// sideCommit commits file on a branch from from and returns it, leaving
// the checkout where it was.
func (fx *fixture) sideCommit(from, file string) string {
	fx.t.Helper()
	was := git(fx.t, fx.ws, "rev-parse", "HEAD")
	git(fx.t, fx.ws, "checkout", "-q", "--detach", from)
	writeFile(fx.t, filepath.Join(fx.ws, file), file+"\n")
	git(fx.t, fx.ws, "add", file)
	git(fx.t, fx.ws, "commit", "-q", "-m", file)
	c := git(fx.t, fx.ws, "rev-parse", "HEAD")
	git(fx.t, fx.ws, "checkout", "-q", "--detach", was)
	return c
}

// treeWith is the merge tree plus file.
func (fx *fixture) treeWith(file string) string {
	fx.t.Helper()
	c := fx.sideCommit(fx.merge, file)
	return git(fx.t, fx.ws, "rev-parse", c+"^{tree}")
}

func TestMergeGroupLinkFromGraph(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the merge group; the fixture's PR #7 is approved
		// by bob on its head.
		setup func(fx *fixture, q string) githubtest.MergeGroup
		want  review.QueueReason
	}{
		{"head_ref names a PR whose head is not in the graph", func(fx *fixture, q string) githubtest.MergeGroup {
			other := fx.sideCommit(fx.base, "other.txt")
			fx.gh.AddPR(owner, repo, githubtest.PR{Number: 8, Author: alice, HeadSHA: other, BaseSHA: fx.base})
			fx.gh.AddReview(owner, repo, 8, githubtest.Review{User: bob, State: "APPROVED", CommitID: other})
			return githubtest.MergeGroup{HeadSHA: q, PR: 8}
		}, review.QueuePRNotInGraph},
		{"the PR's head moved after queueing", func(fx *fixture, q string) githubtest.MergeGroup {
			moved := fx.sideCommit(fx.head, "later.txt")
			fx.gh.SetHead(owner, repo, prNum, moved)
			fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: moved})
			return githubtest.MergeGroup{HeadSHA: q, PR: prNum}
		}, review.QueuePRNotInGraph},
		{"a queue commit that adds a change beyond the PR's merge", func(fx *fixture, _ string) githubtest.MergeGroup {
			q := fx.queueCommit(fx.treeWith("smuggled.txt"), fx.base, fx.head)
			return githubtest.MergeGroup{HeadSHA: q, PR: prNum}
		}, review.QueueExtraChanges},
		{"a squash commit (no parent chain to the PR head)", func(fx *fixture, _ string) githubtest.MergeGroup {
			q := fx.queueCommit(git(fx.t, fx.ws, "rev-parse", fx.merge+"^{tree}"), fx.base)
			return githubtest.MergeGroup{HeadSHA: q, PR: prNum}
		}, review.QueueNotMerge},
		{"parents in the wrong order", func(fx *fixture, _ string) githubtest.MergeGroup {
			q := fx.queueCommit(git(fx.t, fx.ws, "rev-parse", fx.merge+"^{tree}"), fx.head, fx.base)
			return githubtest.MergeGroup{HeadSHA: q, PR: prNum}
		}, review.QueueNotMerge},
		{"a base_sha the queue commit does not descend from", func(fx *fixture, q string) githubtest.MergeGroup {
			return githubtest.MergeGroup{HeadSHA: q, PR: prNum, BaseSHA: fx.sideCommit(fx.base, "elsewhere.txt")}
		}, review.QueueNotDescendant},
		{"head_commit.tree_id is not the checkout's tree", func(fx *fixture, q string) githubtest.MergeGroup {
			return githubtest.MergeGroup{HeadSHA: q, PR: prNum, Tree: fx.treeWith("x.txt")}
		}, review.QueueOtherTree},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx, q := queueFixture(t)
			fx.mergeGroupEvent(tc.setup(fx, q))
			res, err := fx.run()
			mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
			if res.State != replay.AwaitingApproval || res.Recorded != 0 || res.QueueRefusal != string(tc.want) {
				t.Fatalf("%+v, want refusal %s\n%s", res, tc.want, fx.summary())
			}
			if !strings.Contains(strings.ReplaceAll(fx.summary(), `\`, ""), string(tc.want)+":") {
				t.Fatalf("the summary does not name the refusal:\n%s", fx.summary())
			}
			if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.env["GITHUB_SHA"]); ok {
				t.Fatal("a bundle was uploaded without a proven link")
			}
		})
	}
}

// TestMergeGroupPRApprovedAtAnotherHead: the link is proven, but the
// approval names an older commit of the PR: it does not count.
func TestMergeGroupPRApprovedAtAnotherHead(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	older := git(t, fx.ws, "rev-parse", fx.head+"^")
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: older})
	q := fx.release()
	git(t, fx.ws, "checkout", "-q", "--detach", q)
	fx.env["GITHUB_SHA"] = q
	fx.gh.SetRun(owner, repo, q)
	fx.gh.SetGitRepo(owner, repo, fx.ws)
	fx.mergeGroupEvent(githubtest.MergeGroup{HeadSHA: q, PR: prNum})
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if res.QueueRefusal != "" || res.Recorded != 0 || res.Decision == nil || len(res.Decision.Counted) != 0 {
		t.Fatalf("%+v decision %+v", res, res.Decision)
	}
	if len(res.Decision.Ignored) != 1 || res.Decision.Ignored[0].Commit != older {
		t.Fatalf("the approval of %s is not reported as ignored: %+v", older, res.Decision.Ignored)
	}
}
