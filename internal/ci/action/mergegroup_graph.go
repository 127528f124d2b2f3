package action

// The merge-queue link proven from the commit graph. head_ref names the
// pull request (a hint GitHub writes); what links the queue's commit to
// the approved head is the graph, read through the compare API
// (GET repos/{o}/{r}/compare/{base}...{head}: status, behind_by, commits
// with their parents, files with status and blob sha):
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
//  4. the run's tree is the queue commit's tree (head_commit.tree_id).
//
// Squash and rebase queues build single-parent commits whose link to the
// approved head the graph does not show: they are refused (not-queue-merge)
// and the run stays AWAITING_APPROVAL, as for any link not proven.

import (
	"context"
	"fmt"
	"net/url"

	"github.com/proofgate/proofgate/internal/ci/ghapi"
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

func queueRefuse(r QueueReason, format string, args ...any) *QueueLinkError {
	return &QueueLinkError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// maxCompareFiles is where GitHub truncates a comparison's files.
const maxCompareFiles = 300

type cmpFile struct {
	Filename string `json:"filename"`
	Status   string `json:"status"`
	SHA      string `json:"sha"`
}

type cmpCommit struct {
	SHA     string `json:"sha"`
	Parents []struct {
		SHA string `json:"sha"`
	} `json:"parents"`
}

type comparison struct {
	Status   string      `json:"status"`
	BehindBy int         `json:"behind_by"`
	Commits  []cmpCommit `json:"commits"`
	Files    []cmpFile   `json:"files"`
}

func (j *job) compare(ctx context.Context, base, head string) (*comparison, error) {
	var c comparison
	u := fmt.Sprintf("repos/%s/%s/compare/%s...%s", url.PathEscape(j.owner), url.PathEscape(j.name), url.PathEscape(base), url.PathEscape(head))
	if _, err := ghapi.Get(ctx, j.gh, u, &c); err != nil {
		return nil, queueRefuse(QueueAPI, "compare %s...%s: %v", short(base), short(head), err)
	}
	if len(c.Files) >= maxCompareFiles {
		return nil, queueRefuse(QueueUnprovable, "compare %s...%s lists %d files (GitHub truncates at %d)", short(base), short(head), len(c.Files), maxCompareFiles)
	}
	return &c, nil
}

// proveQueueLink proves from the graph that the merge group's head is the
// queue's merge of prHead into base_sha and nothing more.
func (j *job) proveQueueLink(ctx context.Context, prHead string) error {
	g := j.ev.MergeGroup
	step, err := j.compare(ctx, g.BaseSHA, g.HeadSHA)
	if err != nil {
		return err
	}
	if step.Status != "ahead" || step.BehindBy != 0 {
		return queueRefuse(QueueNotDescendant, "the queue commit %s does not descend from base %s (compare status %q, behind by %d)", short(g.HeadSHA), short(g.BaseSHA), step.Status, step.BehindBy)
	}
	var head *cmpCommit
	for i := range step.Commits {
		if step.Commits[i].SHA == g.HeadSHA {
			head = &step.Commits[i]
		}
	}
	if head == nil {
		return queueRefuse(QueueUnprovable, "compare %s...%s does not list the queue commit", short(g.BaseSHA), short(g.HeadSHA))
	}
	if len(head.Parents) != 2 || head.Parents[0].SHA != g.BaseSHA {
		return queueRefuse(QueueNotMerge, "the queue commit %s has %d parent(s), not a merge of base %s and the pull request (a squash or rebase queue is not linked)", short(g.HeadSHA), len(head.Parents), short(g.BaseSHA))
	}
	if head.Parents[1].SHA != prHead {
		return queueRefuse(QueuePRNotInGraph, "the queue commit %s merges %s, not pull request #%d's head %s", short(g.HeadSHA), short(head.Parents[1].SHA), g.PR, short(prHead))
	}
	return j.noExtraChanges(ctx, step, prHead)
}

// noExtraChanges requires every file the queue commit changes relative to
// base_sha to be the pull request's change (or a merge with the base's).
func (j *job) noExtraChanges(ctx context.Context, step *comparison, prHead string) error {
	g := j.ev.MergeGroup
	pr, err := j.compare(ctx, g.BaseSHA, prHead)
	if err != nil {
		return err
	}
	baseSide, err := j.compare(ctx, prHead, g.BaseSHA)
	if err != nil {
		return err
	}
	theirs, both := map[string]cmpFile{}, map[string]bool{}
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
			return queueRefuse(QueueExtraChanges, "the queue commit %s changes %s, which pull request #%d does not change", short(g.HeadSHA), f.Filename, g.PR)
		case t.SHA != f.SHA && !both[f.Filename], t.Status != f.Status && !both[f.Filename]:
			return queueRefuse(QueueExtraChanges, "the queue commit %s changes %s otherwise than pull request #%d", short(g.HeadSHA), f.Filename, g.PR)
		}
	}
	return nil
}

// checkQueueTree requires the planned run's tree to be the queue commit's.
func (j *job) checkQueueTree() error {
	g := j.ev.MergeGroup
	if tree := j.r.Report().Source.Tree; tree != g.Tree {
		return queueRefuse(QueueOtherTree, "the run is bound to tree %s, the queue commit's tree is %s", short(tree), short(g.Tree))
	}
	return nil
}
