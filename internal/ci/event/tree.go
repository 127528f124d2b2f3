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
	t, err := revParse(ctx, dir, sha+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("git rev-parse %s^{tree}: %w", sha, err)
	}
	if !IsHexSHA(t) {
		return "", fmt.Errorf("git rev-parse %s^{tree}: unexpected %q", sha, t)
	}
	return t, nil
}

// Head is the commit checked out in dir (its HEAD).
func Head(ctx context.Context, dir string) (string, error) {
	commit, err := revParse(ctx, dir, "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	return commit, nil
}

// revParse is git rev-parse --verify of rev in the checkout dir, which
// may belong to another user (the runner's workspace).
func revParse(ctx context.Context, dir, rev string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-c", "safe.directory="+dir, "-C", dir, "rev-parse", "--verify", "--quiet", rev)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1")
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
