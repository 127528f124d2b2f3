package review_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/githubtest"
)

// queueSHA is the merge group's queue commit in the queue tests.
const queueSHA = "9999999999999999999999999999999999999999"

// queueGroup is a merge group of pull request prNum into base.
func queueGroup() *event.MergeGroup {
	return &event.MergeGroup{HeadSHA: queueSHA, BaseSHA: base, BaseRef: "refs/heads/main", Tree: "tttttttttttttttttttttttttttttttttttttttt", PR: prNum,
		HeadRef: fmt.Sprintf("refs/heads/gh-readonly-queue/main/pr-%d-%s", prNum, head)}
}

// queueGraph answers the three comparisons of a proven link: the queue
// commit merges head into base and changes a.go as the pull request
// does; the base side changed b.go, which the queue commit merges.
func queueGraph(f *fixture, step githubtest.Compare) {
	f.srv.AddCompare(owner, repo, base, queueSHA, step)
	f.srv.AddCompare(owner, repo, base, head, githubtest.Compare{Status: "diverged",
		Files: []githubtest.File{{Filename: "a.go", Status: "modified", SHA: "a1"}, {Filename: "b.go", Status: "modified", SHA: "b1"}}})
	f.srv.AddCompare(owner, repo, head, base, githubtest.Compare{Status: "diverged",
		Files: []githubtest.File{{Filename: "b.go", Status: "modified", SHA: "b0"}}})
}

func mergeStep(files ...githubtest.File) githubtest.Compare {
	return githubtest.Compare{Status: "ahead", AheadBy: 2,
		Commits: []githubtest.CompareCommit{{SHA: head, Parents: []string{old}}, {SHA: queueSHA, Parents: []string{base, head}}}, Files: files}
}

func TestProveQueueLink(t *testing.T) {
	merged := []githubtest.File{{Filename: "a.go", Status: "modified", SHA: "a1"}, {Filename: "b.go", Status: "modified", SHA: "b2"}}
	many := make([]githubtest.File, 300)
	for i := range many {
		many[i] = githubtest.File{Filename: fmt.Sprintf("f%d", i), Status: "added", SHA: "x"}
	}
	for _, tc := range []struct {
		name string
		step githubtest.Compare
		want review.QueueReason
	}{
		{"the merge of the head", mergeStep(merged...), ""},
		{"not a descendant", githubtest.Compare{Status: "diverged", BehindBy: 1}, review.QueueNotDescendant},
		{"the queue commit not listed", githubtest.Compare{Status: "ahead"}, review.QueueUnprovable},
		{"a squash", githubtest.Compare{Status: "ahead", Commits: []githubtest.CompareCommit{{SHA: queueSHA, Parents: []string{base}}}}, review.QueueNotMerge},
		{"parents swapped", githubtest.Compare{Status: "ahead", Commits: []githubtest.CompareCommit{{SHA: queueSHA, Parents: []string{head, base}}}}, review.QueueNotMerge},
		{"another head", githubtest.Compare{Status: "ahead", Commits: []githubtest.CompareCommit{{SHA: queueSHA, Parents: []string{base, old}}}}, review.QueuePRNotInGraph},
		{"a file the PR does not change", mergeStep(append(merged, githubtest.File{Filename: "c.go", Status: "added", SHA: "c1"})...), review.QueueExtraChanges},
		{"a.go otherwise than the PR", mergeStep(githubtest.File{Filename: "a.go", Status: "modified", SHA: "a9"}), review.QueueExtraChanges},
		{"a truncated comparison", githubtest.Compare{Status: "ahead", Files: many}, review.QueueUnprovable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			queueGraph(f, tc.step)
			err := review.ProveQueueLink(context.Background(), f.gh, owner, repo, queueGroup(), head)
			var qe *review.QueueLinkError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused a proven link: %v", err)
			case tc.want != "" && (!errors.As(err, &qe) || qe.Reason != tc.want || !strings.HasPrefix(err.Error(), string(tc.want)+": ")):
				t.Fatalf("%v, want %s", err, tc.want)
			}
		})
	}
}

func TestProveQueueLinkAPI(t *testing.T) {
	f := setup(t)
	err := review.ProveQueueLink(context.Background(), f.gh, owner, repo, queueGroup(), head)
	var qe *review.QueueLinkError
	if !errors.As(err, &qe) || qe.Reason != review.QueueAPI || !strings.HasPrefix(qe.Detail, "compare bbbbbbbbbbbb...999999999999: ") {
		t.Fatalf("%v, want %s", err, review.QueueAPI)
	}
}

func TestCheckQueueTree(t *testing.T) {
	g := queueGroup()
	if err := review.CheckQueueTree(g, g.Tree); err != nil {
		t.Fatal(err)
	}
	err := review.CheckQueueTree(g, "")
	if err == nil || err.Error() != "other-tree: the run is bound to tree , the queue commit's tree is tttttttttttt" {
		t.Fatalf("%v", err)
	}
}

// QueuedPR links a merge group to its open pull request's head, or says
// why not; failing to read the pull request is no unproven link.
func TestQueuedPR(t *testing.T) {
	f := setup(t)
	queueGraph(f, mergeStep(githubtest.File{Filename: "a.go", Status: "modified", SHA: "a1"}))
	ctx := context.Background()
	g := queueGroup()
	if got, err := review.QueuedPR(ctx, f.gh, owner, repo, g, g.Tree); err != nil || got != head {
		t.Fatalf("proven link: %q %v", got, err)
	}
	noPR, otherPR := queueGroup(), queueGroup()
	noPR.PR = 0
	otherPR.PR = prNum + 1
	for _, tc := range []struct {
		name string
		g    *event.MergeGroup
		gh   bool
		tree string
		want review.QueueReason
	}{
		{"no pull request", noPR, true, g.Tree, review.QueueNoPR},
		{"no token", g, false, g.Tree, review.QueueAPI},
		{"another tree", g, true, "", review.QueueOtherTree},
	} {
		gh := f.gh
		if !tc.gh {
			gh = nil
		}
		_, err := review.QueuedPR(ctx, gh, owner, repo, tc.g, tc.tree)
		var qe *review.QueueLinkError
		if !errors.As(err, &qe) || qe.Reason != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	_, err := review.QueuedPR(ctx, f.gh, owner, repo, otherPR, g.Tree)
	var qe *review.QueueLinkError
	if err == nil || errors.As(err, &qe) || !strings.HasPrefix(err.Error(), fmt.Sprintf("reading pull request #%d of the merge group failed: ", prNum+1)) {
		t.Fatalf("an unreadable pull request: %v", err)
	}
}
