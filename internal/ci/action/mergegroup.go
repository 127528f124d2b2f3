package action

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Merge queues (merge_group events). The run is planned on the queue's
// merge commit (merge_group.head_sha, GITHUB_SHA), so its bundle's source
// is that commit and its tree: the commit the queue fast-forwards the base
// branch to, which a release gate with match: tree (or commit) finds. The
// contract is the base's (merge_group.base_sha), as on pull requests.
//
// There are no reviews of a merge group. Approval comes from the pull
// request the entry came from. GitHub names it in merge_group.head_ref
// (refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>), which is only a
// hint: the PR must be open into the same base branch, and the link is
// proven from the commit graph (internal/ci/review, queue.go): the queue commit is
// the merge of exactly the PR's current head into base_sha, changing
// nothing beyond it, and the run's tree is the queue commit's tree. The
// approving reviews of that head then count under the same rule as on the
// PR (review.Decide, which also refuses a head that moves meanwhile).
// Without a proven link the run stays AWAITING_APPROVAL, no bundle is
// exported, and Result.QueueRefusal names the review.QueueReason.

// checkMergeGroup requires the checkout to be the merge group's head: the
// run binds to what the work tree is.
func (j *job) checkMergeGroup(ctx context.Context) error {
	g := j.ev.MergeGroup
	if g == nil {
		return nil
	}
	head, err := gitHead(ctx, j.ws)
	if err != nil {
		return environment("merge group: %w", err)
	}
	if head != g.HeadSHA {
		return exit.Wrap(exit.Usage, fmt.Errorf("merge group: the checkout is %s, not the queue's merge commit %s (check out github.sha, the default of actions/checkout on merge_group)", short(head), short(g.HeadSHA)))
	}
	j.s.notes = append(j.s.notes, fmt.Sprintf("Merge queue run on merge commit %s (tree %s) for %s.", code(short(g.HeadSHA)), code(short(g.Tree)), code(g.BaseRef)))
	return nil
}

// queued returns the pull request whose reviews approve a merge group
// run, or nil and the pending exit code when the link cannot be proven
// (Result.QueueRefusal says why: a review.QueueReason).
func (j *job) queued(ctx context.Context) (*reviewTarget, int) {
	g := j.ev.MergeGroup
	if g.PR == 0 {
		return nil, j.unlinked(review.QueueRefuse(review.QueueNoPR, "merge group head_ref %q names no pull request of base %s: approval cannot be linked", g.HeadRef, g.BaseRef))
	}
	if j.gh == nil {
		return nil, j.unlinked(review.QueueRefuse(review.QueueAPI, "approval of a merge group comes from its pull request, and input github-token is empty"))
	}
	if err := j.checkQueueTree(); err != nil {
		return nil, j.unlinked(err)
	}
	var pr struct {
		State string `json:"state"`
		Head  struct {
			SHA string `json:"sha"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
	}
	_, err := ghapi.Get(ctx, j.gh, fmt.Sprintf("repos/%s/%s/pulls/%d", url.PathEscape(j.owner), url.PathEscape(j.name), g.PR), &pr)
	if err != nil {
		return nil, j.failed("ProofGate GitHub API", exit.Environment, fmt.Sprintf("reading pull request #%d of the merge group failed: %v", g.PR, err))
	}
	if pr.State != "open" || "refs/heads/"+pr.Base.Ref != g.BaseRef || !strings.HasPrefix(g.HeadRef, "refs/heads/gh-readonly-queue/") {
		return nil, j.unlinked(review.QueueRefuse(review.QueueNoPR, "pull request #%d is %s with base %q, not an open PR into %s: approval cannot be linked", g.PR, pr.State, pr.Base.Ref, g.BaseRef))
	}
	if err := j.proveQueueLink(ctx, pr.Head.SHA); err != nil {
		return nil, j.unlinked(err)
	}
	j.s.notes = append(j.s.notes, fmt.Sprintf("This merge queue run takes its approvals from pull request #%d: the queue commit %s is the merge of its head %s into %s, proven from the commit graph, and adds no other change.",
		g.PR, code(short(g.HeadSHA)), code(short(pr.Head.SHA)), code(short(g.BaseSHA))))
	return &reviewTarget{g.PR, pr.Head.SHA}, ExitOK
}

// unlinked reports an unproven merge-queue link: the run stays pending.
func (j *job) unlinked(err error) int {
	var qe *review.QueueLinkError
	if errors.As(err, &qe) {
		j.res.QueueRefusal = string(qe.Reason)
	}
	return j.pending(err.Error())
}

// proveQueueLink proves from the graph that the merge group's head is the
// queue's merge of prHead into base_sha and nothing more.
func (j *job) proveQueueLink(ctx context.Context, prHead string) error {
	return review.ProveQueueLink(ctx, j.gh, j.owner, j.name, j.ev.MergeGroup, prHead)
}

// checkQueueTree requires the planned run's tree to be the queue commit's.
func (j *job) checkQueueTree() error {
	return review.CheckQueueTree(j.ev.MergeGroup, j.r.Report().Source.Tree)
}
