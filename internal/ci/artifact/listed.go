package artifact

import (
	"context"
	"fmt"
	"net/url"
	"sort"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// Own lists artifact name in owner/repo (one page of 100) and returns the
// unexpired ones of this repository's workflow runs, newest first (equal
// times in the listing's order), and how many came from workflow runs of
// another head repository (a fork): those are not trusted. With head set,
// only artifacts of workflow runs for that head are kept or counted. The
// name is a hint; head_sha and the repository ids, which GitHub records,
// decide.
func Own(ctx context.Context, gh *github.Client, owner, repo, name, head string) (own []*Artifact, fork int, err error) {
	q := url.Values{"name": {name}, "per_page": {"100"}}
	var list struct {
		Artifacts []*Artifact `json:"artifacts"`
	}
	if _, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/actions/artifacts?%s", url.PathEscape(owner), url.PathEscape(repo), q.Encode()), &list); err != nil {
		return nil, 0, fmt.Errorf("list artifacts %s: %w", name, err)
	}
	for _, a := range list.Artifacts {
		switch {
		case a == nil || a.Name != name || a.Expired || head != "" && a.Run.HeadSHA != head:
		case a.Run.HeadRepositoryID != a.Run.RepositoryID || a.Run.RepositoryID == 0:
			fork++
		default:
			own = append(own, a)
		}
	}
	sort.SliceStable(own, func(i, k int) bool { return own[i].CreatedAt.After(own[k].CreatedAt) })
	return own, fork, nil
}
