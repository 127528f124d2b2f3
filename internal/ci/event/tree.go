package event

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// CommitTree returns the tree of commit sha: from git in repoDir when the
// checkout has the commit, else from the REST API (gh may be nil to forbid
// it), else "" (unknown).
func CommitTree(ctx context.Context, repoDir string, gh *github.Client, owner, repo, sha string) string {
	if !IsHexSHA(sha) {
		return ""
	}
	if t, err := gitTree(ctx, repoDir, sha); err == nil {
		return t
	}
	if gh == nil {
		return ""
	}
	var c struct {
		Tree struct {
			SHA string `json:"sha"`
		} `json:"tree"`
	}
	if _, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/git/commits/%s", url.PathEscape(owner), url.PathEscape(repo), sha), &c); err != nil || !IsHexSHA(c.Tree.SHA) {
		return ""
	}
	return c.Tree.SHA
}

// gitTree is the tree of commit sha in the checkout dir.
func gitTree(ctx context.Context, dir, sha string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-c", "safe.directory="+dir, "-C", dir, "rev-parse", "--verify", "--quiet", sha+"^{tree}")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse %s^{tree}: %w", sha, err)
	}
	t := strings.TrimSpace(string(out))
	if !IsHexSHA(t) {
		return "", fmt.Errorf("git rev-parse %s^{tree}: unexpected %q", sha, t)
	}
	return t, nil
}
