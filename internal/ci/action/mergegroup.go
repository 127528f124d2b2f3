package action

import (
	"context"
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Merge queues (merge_group events). The run is planned on the queue's
// merge commit (merge_group.head_sha, GITHUB_SHA), so its bundle's source
// is that commit and its tree: the commit the queue fast-forwards the base
// branch to, which a release gate with match: tree (or commit) finds. The
// contract is the base's (merge_group.base_sha), as on pull requests.
// There are no reviews of a merge group: approval comes from the pull
// request the entry came from, linked from the commit graph
// (review.QueuedPR), whose approving reviews of that head then count under
// the same rule as on the PR (review.Decide, which also refuses a head
// that moves meanwhile). Without a proven link the run stays
// AWAITING_APPROVAL, no bundle is exported, and Result.QueueRefusal names
// the review.QueueReason.

// checkMergeGroup requires the checkout to be the merge group's head: the
// run binds to what the work tree is.
func (j *job) checkMergeGroup(ctx context.Context) error {
	g := j.ev.MergeGroup
	if g == nil {
		return nil
	}
	head, err := event.Head(ctx, j.ws)
	if err != nil {
		return environment("merge group: %w", err)
	}
	if head != g.HeadSHA {
		return exit.Wrap(exit.Usage, fmt.Errorf("merge group: the checkout is %s, not the queue's merge commit %s (check out github.sha, the default of actions/checkout on merge_group)", event.ShortSHA(head), event.ShortSHA(g.HeadSHA)))
	}
	j.s.Notes = append(j.s.Notes, fmt.Sprintf("Merge queue run on merge commit %s (tree %s) for %s.", jobsummary.Code(event.ShortSHA(g.HeadSHA)), jobsummary.Code(event.ShortSHA(g.Tree)), jobsummary.Code(g.BaseRef)))
	return nil
}

// queued returns the pull request whose reviews approve a merge group
// run (review.QueuedPR), or nil and the pending exit code when the link
// cannot be proven (Result.QueueRefusal says why: a review.QueueReason).
func (j *job) queued(ctx context.Context) (*reviewTarget, int) {
	g := j.ev.MergeGroup
	head, err := review.QueuedPR(ctx, j.gh, j.owner, j.name, g, j.r.Report().Source.Tree)
	var qe *review.QueueLinkError
	switch {
	case errors.As(err, &qe):
		j.res.QueueRefusal = string(qe.Reason)
		return nil, j.pending(err.Error())
	case err != nil:
		return nil, j.failed("ProofGate GitHub API", exit.Environment, err.Error())
	}
	j.s.Notes = append(j.s.Notes, fmt.Sprintf("This merge queue run takes its approvals from pull request #%d: the queue commit %s is the merge of its head %s into %s, proven from the commit graph, and adds no other change.",
		g.PR, jobsummary.Code(event.ShortSHA(g.HeadSHA)), jobsummary.Code(event.ShortSHA(head)), jobsummary.Code(event.ShortSHA(g.BaseSHA))))
	return &reviewTarget{g.PR, head}, ExitOK
}
