// Package source binds a run to the code it ran on: the commit, its tree,
// and a digest of the whole work tree state (tracked edits, staged changes,
// untracked files), so that a run planned on one state of the repository is
// reported STALE once that state changes.
package source

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/bounded"
)

// State is the observed state of a repository's work tree.
type State struct {
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
	Dirty  bool   `json:"dirty"`
	// Digest covers `git status --porcelain`, the binary diff of tracked
	// files against HEAD, the path and content digest of every untracked,
	// non-ignored file, the content of every skip-worktree or
	// assume-unchanged file, and each checked-out submodule's own State,
	// with the excluded paths left out. Git-ignored files are not covered.
	Digest string `json:"worktree_digest"`
	// Changes lists up to 20 changed paths, for humans.
	Changes []string `json:"changes,omitempty"`
}

// ErrNotRepository is returned when dir is not inside a git work tree; its
// class is exit.Usage.
var ErrNotRepository error = exit.Sentinel(exit.Usage, "not a git repository")

// ErrNoCommit is returned (wrapped, with git's error) when the repository
// has no commit checked out: a new repository before its first commit.
var ErrNoCommit = errors.New("no commit checked out")

// Inspect reads the state of the repository containing dir. Paths in
// exclude (relative to the repository root, e.g. ".proofgate/runs") are
// left out of the digest.
func Inspect(ctx context.Context, dir string, exclude ...string) (State, error) {
	if _, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree"); err != nil {
		return State{}, fmt.Errorf("%s: %w", dir, ErrNotRepository)
	}
	commit, err := git(ctx, dir, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return State{}, fmt.Errorf("source: %w in %s: %w", ErrNoCommit, dir, err)
	}
	tree, err := git(ctx, dir, "rev-parse", "HEAD^{tree}")
	if err != nil {
		return State{}, fmt.Errorf("source: %w", err)
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return State{}, fmt.Errorf("source: %w", err)
	}
	d := &digester{ctx: ctx, top: strings.TrimSpace(top), spec: []string{"--", "."}, h: sha256.New()}
	for _, e := range exclude {
		if e = filepath.ToSlash(filepath.Clean(e)); e != "." && e != "" {
			d.spec = append(d.spec, ":(exclude,top)"+e)
		}
	}
	status, err := d.worktree()
	if err != nil {
		return State{}, fmt.Errorf("source: %w", err)
	}
	if err := d.hidden(); err != nil {
		return State{}, fmt.Errorf("source: %w", err)
	}
	if err := d.submodules(); err != nil {
		return State{}, fmt.Errorf("source: %w", err)
	}
	st := State{
		Commit: strings.TrimSpace(commit),
		Tree:   strings.TrimSpace(tree),
		Dirty:  len(status) > 0 || len(d.changes) > 0,
		Digest: "sha256:" + hex.EncodeToString(d.h.Sum(nil)),
	}
	for _, rec := range splitZ(status) {
		if len(rec) > 3 && rec[2] == ' ' {
			st.Changes = append(st.Changes, rec[3:])
		}
	}
	st.Changes = append(st.Changes, d.changes...)
	if len(st.Changes) > 20 {
		st.Changes = st.Changes[:20]
	}
	return st, nil
}

// digester hashes the state of one work tree (top) in the order the
// State.Digest documents, limited to the pathspec spec. changes collects
// what status does not show.
type digester struct {
	ctx     context.Context
	top     string
	spec    []string
	h       hash.Hash
	changes []string
}

func (d *digester) git(args ...string) ([]byte, error) {
	return gitRaw(d.ctx, d.top, append(args, d.spec...)...)
}

// worktree hashes the status, the diff against HEAD and every untracked
// file, and returns the status.
func (d *digester) worktree() ([]byte, error) {
	status, err := d.git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.h, "status %d\n", len(status))
	d.h.Write(status)
	diff, err := d.git("diff", "HEAD", "--binary", "--no-ext-diff", "--no-color")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.h, "diff %d\n", len(diff))
	d.h.Write(diff)
	untracked, err := d.git("ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	paths := splitZ(untracked)
	sort.Strings(paths)
	for _, p := range paths {
		fd, err := fileDigest(filepath.Join(d.top, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(d.h, "untracked %q %s\n", p, fd)
	}
	return status, nil
}

// hidden hashes the index entries git was told not to look at
// (update-index --skip-worktree or --assume-unchanged): they hide their
// edits from status and diff, so a check would read bytes that are not the
// commit's. Their work-tree content is hashed and, when present, counts as
// a change.
func (d *digester) hidden() error {
	flagged, err := d.git("ls-files", "-v", "-z")
	if err != nil {
		return err
	}
	for _, p := range hiddenEntries(flagged) {
		fd, err := fileDigest(filepath.Join(d.top, filepath.FromSlash(p)))
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(d.h, "hidden %q absent\n", p) // a sparse checkout leaves it out
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(d.h, "hidden %q %s\n", p, fd)
		d.changes = append(d.changes, p+" (skip-worktree/assume-unchanged)")
	}
	return nil
}

// submodules hashes each checked-out submodule's own state (commit, tree,
// digest, recursively): status shows a dirty submodule as one line however
// its content changes further.
func (d *digester) submodules() error {
	stage, err := d.git("ls-files", "-s", "-z")
	if err != nil {
		return err
	}
	for _, p := range gitlinks(stage) {
		sub := filepath.Join(d.top, filepath.FromSlash(p))
		if _, err := os.Lstat(filepath.Join(sub, ".git")); err != nil {
			fmt.Fprintf(d.h, "submodule %q absent\n", p) // not checked out
			continue
		}
		ss, err := Inspect(d.ctx, sub)
		if err != nil {
			return fmt.Errorf("submodule %s: %w", p, err)
		}
		fmt.Fprintf(d.h, "submodule %q %s %s %s\n", p, ss.Commit, ss.Tree, ss.Digest)
		if ss.Dirty {
			d.changes = append(d.changes, p+" (submodule)")
		}
	}
	return nil
}

// hiddenEntries returns the paths `git ls-files -v -z` tags as
// skip-worktree (S, s) or assume-unchanged (a lowercase tag), sorted and
// without duplicates (a conflicted path has several stages).
func hiddenEntries(b []byte) []string {
	var out []string
	for _, rec := range splitZ(b) {
		if len(rec) < 3 || rec[1] != ' ' {
			continue
		}
		if tag := rec[0]; tag == 'S' || (tag >= 'a' && tag <= 'z') {
			out = append(out, rec[2:])
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// gitlinks returns the submodule paths in `git ls-files -s -z` output
// ("<mode> <object> <stage>\t<path>" with mode 160000), sorted.
func gitlinks(b []byte) []string {
	var out []string
	for _, rec := range splitZ(b) {
		meta, p, ok := strings.Cut(rec, "\t")
		if ok && strings.HasPrefix(meta, "160000 ") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Root returns the top directory of the repository containing dir.
func Root(ctx context.Context, dir string) (string, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepository)
	}
	return strings.TrimSpace(top), nil
}

// Show returns the bytes of path at commit rev, or an error when the
// repository does not have it.
func Show(ctx context.Context, dir, rev, path string) ([]byte, error) {
	return gitRaw(ctx, dir, "show", rev+":"+filepath.ToSlash(path))
}

func fileDigest(p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "symlink %s", t)
	case fi.Mode().IsRegular():
		f, err := bounded.Open(p) // swapped for a FIFO since the Lstat: refused, not a hang
		if err != nil {
			return "", err
		}
		defer f.Close()
		fmt.Fprintf(h, "file %o ", fi.Mode().Perm()&0o111)
		if _, err := io.Copy(h, bufio.NewReader(f)); err != nil {
			return "", err
		}
	default:
		fmt.Fprintf(h, "other %s", fi.Mode().Type())
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func splitZ(b []byte) []string {
	var out []string
	for _, f := range bytes.Split(b, []byte{0}) {
		if len(f) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := gitRaw(ctx, dir, args...)
	return string(b), err
}

func gitRaw(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.quotepath=off"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return nil, fmt.Errorf("git %s: %s: %w", args[len(args)-1], msg, err)
	}
	return out, nil
}
