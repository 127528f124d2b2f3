package review

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/kernel/contract"
)

// Bounds on what Fetch reads.
const (
	MaxReviews   = 10000
	MaxReviewers = 500
	perPage      = 100
)

// HeadMovedError reports that the PR head is no longer the verified commit.
type HeadMovedError struct {
	PR   int
	Want string // the verified head
	Got  string // the head GitHub reports now
}

func (e *HeadMovedError) Error() string {
	return fmt.Sprintf("pull request #%d head moved from %s to %s: approvals are not for the verified commit", e.PR, e.Want, e.Got)
}

// ErrNoPR means no open pull request has the commit as its head.
var ErrNoPR = errors.New("no open pull request has this commit as its head")

// ErrNotMerged means no single pull request was merged into the commit.
var ErrNotMerged = errors.New("no single merged pull request has this commit as its merge commit")

// ErrIncompleteCommits means GitHub did not list every commit of the PR
// (it lists at most 250), so commit authors cannot all be excluded.
var ErrIncompleteCommits = errors.New("pull request commits are not completely listed")

// Fetch reads the review state of owner/repo#pr for the verified head. It
// refuses with *HeadMovedError if the PR head is already another commit.
// The returned Input has no Rule; Decide fills it.
func Fetch(ctx context.Context, gh *github.Client, owner, repo string, pr int, head string) (Input, error) {
	in := Input{Head: head, Permissions: map[int64]Permission{}}
	p, err := getPR(ctx, gh, owner, repo, pr)
	if err != nil {
		return in, err
	}
	if got := p.Head.SHA; got != head {
		return in, &HeadMovedError{PR: pr, Want: head, Got: got}
	}
	in.Author = p.User.user()
	in.RuleFacts = RuleFacts{BaseBranch: p.Base.Ref, BaseSHA: p.Base.SHA, Title: p.Title}
	for _, l := range p.Labels {
		in.RuleFacts.Labels = append(in.RuleFacts.Labels, l.Name)
	}
	in.changedFiles = p.ChangedFiles

	prURL := fmt.Sprintf("repos/%s/%s/pulls/%d", url.PathEscape(owner), url.PathEscape(repo), pr)
	where := fmt.Sprintf("%s/%s#%d", owner, repo, pr)
	if err := listReviews(ctx, gh, prURL, where, &in); err != nil {
		return in, err
	}
	if err := listCommits(ctx, gh, prURL, where, p.Commits, &in); err != nil {
		return in, err
	}
	return in, reviewerPermissions(ctx, gh, owner, repo, where, &in)
}

// listReviews reads every review of the pull request into in.Reviews.
func listReviews(ctx context.Context, gh *github.Client, prURL, where string, in *Input) error {
	for page := 1; page != 0; {
		var rs []ghReview
		resp, err := get(ctx, gh, pageURL(prURL+"/reviews", page), &rs)
		if err != nil {
			return fmt.Errorf("list reviews of %s: %w", where, err)
		}
		for _, r := range rs {
			rv := Review{ID: r.ID, User: r.User.user(), State: r.State, CommitID: r.CommitID}
			if r.SubmittedAt != nil {
				rv.SubmittedAt = *r.SubmittedAt
			}
			in.Reviews = append(in.Reviews, rv)
		}
		if len(in.Reviews) > MaxReviews {
			return fmt.Errorf("list reviews of %s: more than %d reviews", where, MaxReviews)
		}
		page = resp.NextPage
	}
	return nil
}

// listCommits reads every commit of the pull request (its SHAs and its
// author and committer accounts), refusing a listing shorter than the
// pull request's commit count.
func listCommits(ctx context.Context, gh *github.Client, prURL, where string, want int, in *Input) error {
	listed := 0
	for page := 1; page != 0; {
		var cs []ghCommit
		resp, err := get(ctx, gh, pageURL(prURL+"/commits", page), &cs)
		if err != nil {
			return fmt.Errorf("list commits of %s: %w", where, err)
		}
		for _, c := range cs {
			listed++
			in.RuleFacts.PRCommits = append(in.RuleFacts.PRCommits, c.SHA)
			for _, u := range []*ghUser{c.Author, c.Committer} {
				if u != nil && (u.ID != 0 || u.Login != "") {
					in.CommitUsers = append(in.CommitUsers, u.user())
				}
			}
		}
		if listed > 10000 {
			return fmt.Errorf("list commits of %s: too many commits", where)
		}
		page = resp.NextPage
	}
	if listed < want {
		return fmt.Errorf("%s: %d of %d commits listed: %w", where, listed, want, ErrIncompleteCommits)
	}
	return nil
}

// reviewerPermissions reads the permission of every human reviewer with a
// decisive review.
func reviewerPermissions(ctx context.Context, gh *github.Client, owner, repo, where string, in *Input) error {
	seen := map[int64]bool{}
	for _, r := range in.Reviews {
		if r.User.ID == 0 || r.User.IsBot() || seen[r.User.ID] || !decisive(r.State) {
			continue
		}
		seen[r.User.ID] = true
		if len(seen) > MaxReviewers {
			return fmt.Errorf("%s: more than %d reviewers", where, MaxReviewers)
		}
		perm, ok, err := permission(ctx, gh, owner, repo, r.User)
		if err != nil {
			return err
		}
		if ok {
			in.Permissions[r.User.ID] = perm
		}
	}
	return nil
}

// getPR reads a pull request.
func getPR(ctx context.Context, gh *github.Client, owner, repo string, pr int) (*ghPR, error) {
	var p ghPR
	if _, err := get(ctx, gh, fmt.Sprintf("repos/%s/%s/pulls/%d", url.PathEscape(owner), url.PathEscape(repo), pr), &p); err != nil {
		return nil, fmt.Errorf("get pull request %s/%s#%d: %w", owner, repo, pr, err)
	}
	return &p, nil
}

// permission reads a collaborator's permission, with role_name (which
// go-github v62 lacks). ok is false when the answer is for another account
// (the login was renamed and reused).
func permission(ctx context.Context, gh *github.Client, owner, repo string, u User) (Permission, bool, error) {
	var v ghPermission
	resp, err := get(ctx, gh, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission",
		url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(u.Login)), &v)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return Permission{Permission: "none"}, true, nil
		}
		return Permission{}, false, fmt.Errorf("permission of %s on %s/%s: %w", u.Login, owner, repo, err)
	}
	if v.User != nil && v.User.ID != 0 && v.User.ID != u.ID {
		return Permission{}, false, nil
	}
	return Permission{Permission: v.Permission, RoleName: v.RoleName}, true, nil
}

// Decide fetches the review state, evaluates rule, then reads the PR head
// again: if it moved, the decision is unsatisfied and the error is a
// *HeadMovedError. Any API error yields an unsatisfied decision.
func Decide(ctx context.Context, gh *github.Client, owner, repo string, pr int, head string, rule contract.Approval) (Decision, error) {
	return decide(ctx, gh, owner, repo, pr, head, rule, Options{})
}

func decide(ctx context.Context, gh *github.Client, owner, repo string, pr int, head string, rule contract.Approval, opts Options) (Decision, error) {
	in, err := Fetch(ctx, gh, owner, repo, pr, head)
	if err != nil {
		return Decision{Head: head, Required: rule.Required, Missing: rule.Required,
			Summary: "approval state could not be read: " + err.Error()}, err
	}
	in.Rule = rule
	if len(rule.Rules) > 0 {
		if err := FetchRuleFacts(ctx, gh, owner, repo, pr, &in); err != nil {
			return Decision{Head: head, Required: rule.Required, Missing: rule.Required,
				Summary: "approval rules could not be evaluated: " + err.Error()}, err
		}
		agentSessionFact(ctx, &in, opts)
	}
	d := Evaluate(in)
	p, err := getPR(ctx, gh, owner, repo, pr)
	if err != nil {
		d.Satisfied = false
		return d, fmt.Errorf("re-read: %w", err)
	}
	if got := p.Head.SHA; got != head {
		d.Satisfied = false
		herr := &HeadMovedError{PR: pr, Want: head, Got: got}
		d.Summary = herr.Error()
		return d, herr
	}
	return d, nil
}

// MergedPR is a pull request GitHub records as merged into a commit.
type MergedPR struct {
	Number int
	Head   string // the head the reviews approved
}

// FindMerged returns the pull request GitHub records as merged into exactly
// commit (merge_commit_sha, with merged_at set): the one whose reviews a run
// of that merge commit (a push to its base branch) takes its approvals from.
// A commit no pull request was merged into, or several, is ErrNoPR.
func FindMerged(ctx context.Context, gh *github.Client, owner, repo, commit string) (MergedPR, error) {
	var found []MergedPR
	for page, n := 1, 0; page != 0 && n < 20; n++ {
		var prs []ghPR
		resp, err := get(ctx, gh, pageURL(fmt.Sprintf("repos/%s/%s/commits/%s/pulls", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(commit)), page), &prs)
		if err != nil {
			return MergedPR{}, fmt.Errorf("pull requests for %s in %s/%s: %w", commit, owner, repo, err)
		}
		for _, p := range prs {
			if p.MergedAt != nil && *p.MergedAt != "" && p.MergeCommitSHA != nil && *p.MergeCommitSHA == commit &&
				p.Number > 0 && hexSHA.MatchString(p.Head.SHA) {
				found = append(found, MergedPR{Number: p.Number, Head: p.Head.SHA})
			}
		}
		page = resp.NextPage
	}
	if len(found) != 1 {
		return MergedPR{}, fmt.Errorf("%s in %s/%s: %d pull requests were merged into it: %w", commit, owner, repo, len(found), ErrNotMerged)
	}
	return found[0], nil
}

var hexSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// FindPR returns the number of the open pull request whose head is sha
// (commits/{sha}/pulls), for runs whose event payload names no PR.
func FindPR(ctx context.Context, gh *github.Client, owner, repo, sha string) (int, error) {
	var found []int
	for page, n := 1, 0; page != 0 && n < 20; n++ {
		var prs []ghPR
		resp, err := get(ctx, gh, pageURL(fmt.Sprintf("repos/%s/%s/commits/%s/pulls", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(sha)), page), &prs)
		if err != nil {
			return 0, fmt.Errorf("pull requests for %s in %s/%s: %w", sha, owner, repo, err)
		}
		for _, p := range prs {
			if p.State == "open" && p.Head.SHA == sha {
				found = append(found, p.Number)
			}
		}
		page = resp.NextPage
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("%s in %s/%s: %w", sha, owner, repo, ErrNoPR)
	case 1:
		return found[0], nil
	}
	return 0, fmt.Errorf("%s in %s/%s is the head of several open pull requests %v", sha, owner, repo, found)
}
