package event

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// MaxContractBytes bounds a contract file read from git or the API.
const MaxContractBytes = 1 << 20

// ErrNotInBase means the base commit has no file at the contract path.
var ErrNotInBase = errors.New("the base commit has no contract at this path")

// ContractAt returns the contract file at path as of commit baseSHA (the
// base commit of a pull request, or the commit a release gate verifies):
// from git in repoDir when the checkout has that commit, else from the
// contents API (gh may be nil to forbid the API). A PR can therefore never
// relax the contract that governs it.
func ContractAt(ctx context.Context, repoDir string, gh *github.Client, owner, repo, baseSHA, file string) ([]byte, error) {
	if !IsHexSHA(baseSHA) {
		return nil, fmt.Errorf("base commit %q is not a full hex SHA", baseSHA)
	}
	if file == "" || strings.HasPrefix(file, "/") || strings.HasPrefix(file, "-") || strings.Contains(file, "\\") ||
		path.Clean(file) != file || file == ".." || strings.HasPrefix(file, "../") {
		return nil, fmt.Errorf("contract path %q is not a clean relative path", file)
	}
	data, err := fromGit(ctx, repoDir, baseSHA, file)
	if err == nil || errors.Is(err, ErrNotInBase) {
		return data, err
	}
	if gh == nil {
		return nil, fmt.Errorf("contract %s at %s: %w", file, baseSHA, err)
	}
	return fromAPI(ctx, gh, owner, repo, baseSHA, file)
}

var errNoCommit = errors.New("commit not in the checkout")

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// The workspace may be owned by another uid (container actions run as
	// root): trust it explicitly, from protected (command line) config.
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "safe.directory=" + abs, "-C", abs}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1")
	var out limited
	out.max = MaxContractBytes
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	if out.over {
		return nil, fmt.Errorf("git %s: output over %d bytes", args[0], MaxContractBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out.buf.Bytes(), nil
}

func fromGit(ctx context.Context, dir, sha, file string) ([]byte, error) {
	if _, err := git(ctx, dir, "cat-file", "-e", sha+"^{commit}"); err != nil {
		return nil, fmt.Errorf("%w: %v", errNoCommit, err)
	}
	typ, err := git(ctx, dir, "cat-file", "-t", sha+":"+file)
	if err != nil {
		return nil, fmt.Errorf("contract %s at %s: %w", file, sha, ErrNotInBase)
	}
	if t := strings.TrimSpace(string(typ)); t != "blob" {
		return nil, fmt.Errorf("contract %s at %s is a %s, not a file", file, sha, t)
	}
	return git(ctx, dir, "cat-file", "blob", sha+":"+file)
}

func fromAPI(ctx context.Context, gh *github.Client, owner, repo, sha, file string) ([]byte, error) {
	// A directory answers with an array, which is not a RepositoryContent.
	fc := new(github.RepositoryContent)
	resp, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/contents/%s?ref=%s", url.PathEscape(owner), url.PathEscape(repo),
		escapePath(file), url.QueryEscape(sha)), fc)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("contract %s at %s in %s/%s: %w", file, sha, owner, repo, ErrNotInBase)
		}
		return nil, fmt.Errorf("contract %s at %s in %s/%s: %w", file, sha, owner, repo, err)
	}
	if fc.GetType() != "file" {
		return nil, fmt.Errorf("contract %s at %s in %s/%s is not a file", file, sha, owner, repo)
	}
	if fc.GetSize() > MaxContractBytes {
		return nil, fmt.Errorf("contract %s at %s: %d bytes, over %d", file, sha, fc.GetSize(), MaxContractBytes)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("contract %s at %s in %s/%s: %w", file, sha, owner, repo, err)
	}
	if len(s) > MaxContractBytes {
		return nil, fmt.Errorf("contract %s at %s: over %d bytes", file, sha, MaxContractBytes)
	}
	return []byte(s), nil
}

// ContractChanged reports whether the workspace copy of the contract differs
// from the base version (a missing workspace copy is a change).
func ContractChanged(base []byte, workspacePath string) (bool, error) {
	f, err := bounded.Open(workspacePath)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	cur, err := io.ReadAll(io.LimitReader(f, MaxContractBytes+1))
	if err != nil {
		return false, fmt.Errorf("%s: %w", workspacePath, err)
	}
	return !bytes.Equal(cur, base), nil
}

type limited struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		l.over = true
		return 0, errors.New("output limit exceeded")
	}
	return l.buf.Write(p)
}

// escapePath escapes each segment of a repository path for the contents API.
func escapePath(p string) string {
	seg := strings.Split(p, "/")
	for i, s := range seg {
		seg[i] = url.PathEscape(s)
	}
	return strings.Join(seg, "/")
}
