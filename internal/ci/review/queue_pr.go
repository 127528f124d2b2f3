package review

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/event"
)

// QueuedPR returns the head of the pull request whose reviews approve a
// run of merge group g in owner/repo. GitHub names the pull request in
// merge_group.head_ref (refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>),
// which is only a hint: it must be open into g's base branch, the queue
// commit must merge exactly its current head into base_sha, changing
// nothing beyond it (ProveQueueLink), and the run's tree must be the
// queue commit's (CheckQueueTree). gh nil reads nothing. A link not proven
// is a *QueueLinkError; failing to read the pull request is another error.
func QueuedPR(ctx context.Context, gh *github.Client, owner, repo string, g *event.MergeGroup, tree string) (string, error) {
	if g.PR == 0 {
		return "", QueueRefuse(QueueNoPR, "merge group head_ref %q names no pull request of base %s: approval cannot be linked", g.HeadRef, g.BaseRef)
	}
	if gh == nil {
		return "", QueueRefuse(QueueAPI, "approval of a merge group comes from its pull request, and input github-token is empty")
	}
	if err := CheckQueueTree(g, tree); err != nil {
		return "", err
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
	if _, err := get(ctx, gh, fmt.Sprintf("repos/%s/%s/pulls/%d", url.PathEscape(owner), url.PathEscape(repo), g.PR), &pr); err != nil {
		return "", fmt.Errorf("reading pull request #%d of the merge group failed: %w", g.PR, err)
	}
	if pr.State != "open" || "refs/heads/"+pr.Base.Ref != g.BaseRef || !strings.HasPrefix(g.HeadRef, "refs/heads/gh-readonly-queue/") {
		return "", QueueRefuse(QueueNoPR, "pull request #%d is %s with base %q, not an open PR into %s: approval cannot be linked", g.PR, pr.State, pr.Base.Ref, g.BaseRef)
	}
	if err := ProveQueueLink(ctx, gh, owner, repo, g, pr.Head.SHA); err != nil {
		return "", err
	}
	return pr.Head.SHA, nil
}
