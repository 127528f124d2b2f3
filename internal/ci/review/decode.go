package review

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// The replies a review decision reads, decoded strictly by ghapi.Get: a
// duplicate or a case variant of any member named here is refused.

type ghUser struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

func (u *ghUser) user() User {
	if u == nil {
		return User{}
	}
	return User{Login: u.Login, ID: u.ID, Type: u.Type}
}

type ghPR struct {
	Number int     `json:"number"`
	State  string  `json:"state"`
	User   *ghUser `json:"user"`
	Head   struct {
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"base"`
	Title  string `json:"title"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	ChangedFiles int `json:"changed_files"`
	Commits      int `json:"commits"`
	// MergedAt and MergeCommitSHA are set once the pull request merged.
	MergedAt       *string `json:"merged_at"`
	MergeCommitSHA *string `json:"merge_commit_sha"`
}

type ghReview struct {
	ID          int64      `json:"id"`
	User        *ghUser    `json:"user"`
	State       string     `json:"state"`
	CommitID    string     `json:"commit_id"`
	SubmittedAt *time.Time `json:"submitted_at"`
}

type ghCommit struct {
	SHA       string  `json:"sha"`
	Author    *ghUser `json:"author"`
	Committer *ghUser `json:"committer"`
}

type ghPermission struct {
	Permission string  `json:"permission"`
	RoleName   string  `json:"role_name"`
	User       *ghUser `json:"user"`
}

// get reads u strictly (see ghapi.Get).
func get(ctx context.Context, gh *github.Client, u string, v any) (*github.Response, error) {
	return ghapi.Get(ctx, gh, u, v)
}

func pageURL(u string, page int) string {
	return fmt.Sprintf("%s?page=%d&per_page=%d", u, page, perPage)
}
