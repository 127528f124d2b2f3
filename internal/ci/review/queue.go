package review

// The merge-queue link proven from the commit graph. There are no reviews
// of a merge group: its approval comes from the pull request the entry
// came from, as a push run's comes from the pull request merged into it
// (FindMerged). head_ref names the pull request (a hint GitHub writes);
// what links the queue's commit to the approved head is the graph, read
// through the compare API (GET repos/{o}/{r}/compare/{base}...{head}:
// status, behind_by, commits with their parents, files with status and
// blob sha):
//
//  1. the merge group's head descends from its base_sha (compare
//     base_sha...head_sha is "ahead", behind_by 0);
//  2. the head is the commit GitHub's merge queue builds for one entry
//     with the merge method: exactly two parents, base_sha first (the
//     base, or the entry ahead in the queue) and the pull request's
//     current head second;
//  3. the queue commit adds nothing beyond that merge: every file it
//     changes relative to base_sha is a file the pull request changes
//     (compare base_sha...pr_head, three-dot: the PR's own changes), with
//     the PR's status and blob, unless the base side changed the same file
//     since the merge base (compare pr_head...base_sha), where a clean
//     merge result differs from both;
//  4. the run's tree is the queue commit's tree (head_commit.tree_id,
//     CheckQueueTree).
//
// Squash and rebase queues build single-parent commits whose link to the
// approved head the graph does not show: they are refused (not-queue-merge)
// and the run stays AWAITING_APPROVAL, as for any link not proven.

import (
	"context"
	"fmt"
	"net/url"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/event"
)

// QueueReason says why a merge group is not linked to its pull request.
type QueueReason string

// Reasons of an unproven merge-queue link.
const (
	QueueNoPR          QueueReason = "no-pull-request"      // head_ref names none, or the PR is not open into the base
	QueueNotDescendant QueueReason = "not-descendant"       // the head does not descend from base_sha
	QueueNotMerge      QueueReason = "not-queue-merge"      // the head is not a two-parent merge of base_sha
	QueuePRNotInGraph  QueueReason = "pr-head-not-in-graph" // the merge's second parent is not the PR's head
	QueueExtraChanges  QueueReason = "extra-changes"        // the queue commit changes files beyond the PR's merge
	QueueUnprovable    QueueReason = "unprovable"           // the API's answer is truncated or inconsistent
	QueueOtherTree     QueueReason = "other-tree"           // the run's tree is not the queue commit's tree
	QueueAPI           QueueReason = "github-api"
)

// QueueLinkError is an unproven link.
type QueueLinkError struct {
	Reason QueueReason
	Detail string
}

func (e *QueueLinkError) Error() string { return string(e.Reason) + ": " + e.Detail }

// QueueRefuse is an unproven link with reason r.
func QueueRefuse(r QueueReason, format string, args ...any) *QueueLinkError {
	return &QueueLinkError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// maxCompareFiles is where GitHub truncates a comparison's files.
const maxCompareFiles = 300

// queueGraph reads the commit graph of merge group g in owner/repo.
type queueGraph struct {
	gh          *github.Client
	owner, repo string
	g           *event.MergeGroup
}

// ProveQueueLink proves from the graph of owner/repo that merge group g's
// head is the queue's merge of prHead, its pull request's current head,
// into g.BaseSHA and nothing more; else it returns a *QueueLinkError.
func ProveQueueLink(ctx context.Context, gh *github.Client, owner, repo string, g *event.MergeGroup, prHead string) error {
	q := queueGraph{gh: gh, owner: owner, repo: repo, g: g}
	step, err := q.compare(ctx, g.BaseSHA, g.HeadSHA)
	if err != nil {
		return err
	}
	if step.Status != "ahead" || step.BehindBy != 0 {
		return QueueRefuse(QueueNotDescendant, "the queue commit %s does not descend from base %s (compare status %q, behind by %d)", event.ShortSHA(g.HeadSHA), event.ShortSHA(g.BaseSHA), step.Status, step.BehindBy)
	}
	var parents []string
	found := false
	for _, c := range step.Commits {
		if c.SHA == g.HeadSHA {
			found, parents = true, nil
			for _, p := range c.Parents {
				parents = append(parents, p.SHA)
			}
		}
	}
	if !found {
		return QueueRefuse(QueueUnprovable, "compare %s...%s does not list the queue commit", event.ShortSHA(g.BaseSHA), event.ShortSHA(g.HeadSHA))
	}
	if len(parents) != 2 || parents[0] != g.BaseSHA {
		return QueueRefuse(QueueNotMerge, "the queue commit %s has %d parent(s), not a merge of base %s and the pull request (a squash or rebase queue is not linked)", event.ShortSHA(g.HeadSHA), len(parents), event.ShortSHA(g.BaseSHA))
	}
	if parents[1] != prHead {
		return QueueRefuse(QueuePRNotInGraph, "the queue commit %s merges %s, not pull request #%d's head %s", event.ShortSHA(g.HeadSHA), event.ShortSHA(parents[1]), g.PR, event.ShortSHA(prHead))
	}
	return q.noExtraChanges(ctx, step, prHead)
}

// compare reads base...head, refusing a truncated answer.
func (q queueGraph) compare(ctx context.Context, base, head string) (*ghCompare, error) {
	var c ghCompare
	u := fmt.Sprintf("repos/%s/%s/compare/%s...%s", url.PathEscape(q.owner), url.PathEscape(q.repo), url.PathEscape(base), url.PathEscape(head))
	if _, err := get(ctx, q.gh, u, &c); err != nil {
		return nil, QueueRefuse(QueueAPI, "compare %s...%s: %v", event.ShortSHA(base), event.ShortSHA(head), err)
	}
	if len(c.Files) >= maxCompareFiles {
		return nil, QueueRefuse(QueueUnprovable, "compare %s...%s lists %d files (GitHub truncates at %d)", event.ShortSHA(base), event.ShortSHA(head), len(c.Files), maxCompareFiles)
	}
	return &c, nil
}

// noExtraChanges requires every file the queue commit changes relative to
// base_sha (step) to be the pull request's change (or a merge with the
// base's).
func (q queueGraph) noExtraChanges(ctx context.Context, step *ghCompare, prHead string) error {
	g := q.g
	pr, err := q.compare(ctx, g.BaseSHA, prHead)
	if err != nil {
		return err
	}
	baseSide, err := q.compare(ctx, prHead, g.BaseSHA)
	if err != nil {
		return err
	}
	theirs, both := map[string]ghFile{}, map[string]bool{}
	for _, f := range pr.Files {
		theirs[f.Filename] = f
	}
	for _, f := range baseSide.Files {
		both[f.Filename] = true
	}
	for _, f := range step.Files {
		t, ok := theirs[f.Filename]
		switch {
		case !ok:
			return QueueRefuse(QueueExtraChanges, "the queue commit %s changes %s, which pull request #%d does not change", event.ShortSHA(g.HeadSHA), f.Filename, g.PR)
		case t.SHA != f.SHA && !both[f.Filename], t.Status != f.Status && !both[f.Filename]:
			return QueueRefuse(QueueExtraChanges, "the queue commit %s changes %s otherwise than pull request #%d", event.ShortSHA(g.HeadSHA), f.Filename, g.PR)
		}
	}
	return nil
}

// CheckQueueTree requires tree, the planned run's, to be merge group g's
// queue commit's tree.
func CheckQueueTree(g *event.MergeGroup, tree string) error {
	if tree != g.Tree {
		return QueueRefuse(QueueOtherTree, "the run is bound to tree %s, the queue commit's tree is %s", event.ShortSHA(tree), event.ShortSHA(g.Tree))
	}
	return nil
}
