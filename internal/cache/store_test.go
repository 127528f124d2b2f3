package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

func open(t *testing.T, root string, s Scope) *Store {
	t.Helper()
	st, err := Open(root, s, "")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func acquire(t *testing.T, s *Store, uses ...Use) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := s.Acquire(ctx, "run-1", "check", uses)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func reason(t *testing.T, err error, want Reason) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) || ce.Reason != want {
		t.Fatalf("error %v, want reason %s", err, want)
	}
}

var rw = Use{Name: "go-mod", Mount: "/cache/go-mod"}
var ro = Use{Name: "go-mod", Mount: "/cache/go-mod", ReadOnly: true}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPullRequestNeverWritesDefault: a PR run's writable use mounts its own
// directory, seeded from default's; its read-only use reads default's; the
// default directory is never changed by it.
func TestPullRequestNeverWritesDefault(t *testing.T) {
	root := t.TempDir()
	def := open(t, root, Default())
	l := acquire(t, def, rw)
	write(t, filepath.Join(l.Mounts()[0].Source, "mod", "a.txt"), "from default")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	defTree, err := walkTree(filepath.Join(root, "default", "go-mod"), false)
	if err != nil {
		t.Fatal(err)
	}

	pr := open(t, root, PullRequest(7))
	l = acquire(t, pr, ro)
	if m := l.Mounts()[0]; m.Scope != "default" || m.RunScope != "pr-7" || m.Mode != runtime.CacheReadOnly || m.Provenance != "recorded" || m.Generation != 1 || m.Digest != defTree.Digest {
		t.Fatalf("PR read-only mount %+v", m)
	}
	l.Release()
	l = acquire(t, pr, rw)
	m := l.Mounts()[0]
	if m.Scope != "pr-7" || m.Source != filepath.Join(pr.Root(), "pr-7", "go-mod") || m.Mode != runtime.CacheReadWrite || m.Provenance != "seeded" {
		t.Fatalf("PR writable mount %+v", m)
	}
	if b, err := os.ReadFile(filepath.Join(m.Source, "mod", "a.txt")); err != nil || string(b) != "from default" {
		t.Fatalf("seed: %q %v", b, err)
	}
	write(t, filepath.Join(m.Source, "mod", "a.txt"), "poisoned by the PR")
	write(t, filepath.Join(m.Source, "evil"), "x")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	after, err := walkTree(filepath.Join(root, "default", "go-mod"), false)
	if err != nil || after.Stamp != defTree.Stamp {
		t.Fatalf("the PR changed the default scope: %v", err)
	}
	// The PR's own directory now exists: its read-only uses read it.
	l = acquire(t, pr, ro)
	if m := l.Mounts()[0]; m.Scope != "pr-7" || m.Provenance != "recorded" {
		t.Fatalf("PR read-only after a write %+v", m)
	}
	l.Release()

	// A default-branch run (and a local one) never mounts the PR's tree.
	for _, s := range []Scope{Default(), Local(), PullRequest(8)} {
		l := acquire(t, open(t, root, s), ro)
		if m := l.Mounts()[0]; m.Scope == "pr-7" || filepath.Base(filepath.Dir(m.Source)) == "pr-7" {
			t.Fatalf("scope %s mounted the PR's cache: %+v", s.Name, m)
		}
		if _, err := os.Stat(filepath.Join(l.Mounts()[0].Source, "evil")); err == nil {
			t.Fatalf("scope %s sees the PR's write", s.Name)
		}
		l.Release()
	}
}

// TestSymlinkEscape: a cache directory, scope directory or root that is a
// symlink, and a tree holding a symlink out of the cache, are refused.
func TestSymlinkEscape(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), "host file")

	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "default"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "default", "go-mod")); err != nil {
		t.Fatal(err)
	}
	_, err := open(t, root, Default()).Acquire(context.Background(), "r", "c", []Use{ro})
	reason(t, err, ReasonSymlink)

	root = t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "default")); err != nil {
		t.Fatal(err)
	}
	_, err = open(t, root, Default()).Acquire(context.Background(), "r", "c", []Use{rw})
	reason(t, err, ReasonSymlink)

	for _, target := range []string{filepath.Join(outside, "secret"), "../../../secret", "../..", "/etc/passwd"} {
		root = t.TempDir()
		s := open(t, root, Default())
		l := acquire(t, s, rw)
		dir := l.Mounts()[0].Source
		l.Release()
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "sub", "link")); err != nil {
			t.Fatal(err)
		}
		_, err := s.Acquire(context.Background(), "r", "c", []Use{ro})
		reason(t, err, ReasonSymlink)
		// A PR seeding from such a default tree is refused too.
		_, err = open(t, root, PullRequest(3)).Acquire(context.Background(), "r", "c", []Use{rw})
		reason(t, err, ReasonSymlink)
	}
	// A symlink that stays inside the cache is fine.
	root = t.TempDir()
	s := open(t, root, Default())
	l := acquire(t, s, rw)
	dir := l.Mounts()[0].Source
	l.Release()
	write(t, filepath.Join(dir, "a", "f"), "x")
	if err := os.Symlink("../a/f", filepath.Join(dir, "a", "g")); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, ro).Release()
}

// TestChangedWhileReadOnly: a read-only cache that changes between its
// digest and the end of the check fails the release (ReasonChanged); a
// change outside ProofGate between two runs makes the next mount's
// provenance "unrecorded".
func TestChangedWhileReadOnly(t *testing.T) {
	s := open(t, t.TempDir(), Local())
	l := acquire(t, s, rw)
	dir := l.Mounts()[0].Source
	write(t, filepath.Join(dir, "f"), "v1")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l = acquire(t, s, ro)
	if m := l.Mounts()[0]; m.Provenance != "recorded" || m.WrittenBy != "run-1/check" {
		t.Fatalf("mount %+v", m)
	}
	// Same size, mtime set back: only the stamp (inode/ctime) sees it.
	fi, _ := os.Stat(filepath.Join(dir, "f"))
	write(t, filepath.Join(dir, "f"), "v2")
	os.Chtimes(filepath.Join(dir, "f"), fi.ModTime(), fi.ModTime())
	reason(t, l.Release(), ReasonChanged)

	l = acquire(t, s, ro)
	if m := l.Mounts()[0]; m.Provenance != "unrecorded" || m.Generation != 1 {
		t.Fatalf("after an outside change: %+v", m)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l = acquire(t, s, rw)
	l.Release()
	l = acquire(t, s, ro)
	if m := l.Mounts()[0]; m.Provenance != "recorded" || m.Generation != 2 {
		t.Fatalf("after a recorded write: %+v", m)
	}
	l.Release()
}

// TestWritersSerialize: two writable leases on one cache never overlap; a
// second waits until the first is released (or its context ends); readers
// share.
func TestWritersSerialize(t *testing.T) {
	root := t.TempDir()
	s := open(t, root, Local())
	first := acquire(t, s, rw)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := open(t, root, Local()).Acquire(ctx, "run-2", "other", []Use{rw})
	cancel()
	reason(t, err, ReasonIO)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the deadline: %v", err)
	}
	_, err = s.Acquire(ctxFor(200*time.Millisecond), "run-2", "reader", []Use{ro})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a reader during a write: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := s.Acquire(ctxFor(5*time.Second), "run-2", "other", []Use{rw})
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("second writer did not wait: %v", err)
	default:
	}
	first.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	a, b := acquire(t, s, ro), acquire(t, s, ro)
	a.Release()
	b.Release()
}

func ctxFor(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d+time.Second, cancel)
	return ctx
}

// TestRootPlacement: the root must be absolute and outside the repository.
func TestRootPlacement(t *testing.T) {
	repo := t.TempDir()
	for _, root := range []string{"rel/root", filepath.Join(repo, ".proofgate", "caches"), filepath.Dir(repo)} {
		_, err := Open(root, Local(), repo)
		reason(t, err, ReasonRoot)
	}
	if _, err := Open(t.TempDir(), Scope{Name: "../x"}, repo); err == nil {
		t.Fatal("bad scope accepted")
	}
	env := map[string]string{"RUNNER_TEMP": "/rt"}
	if r, _ := DefaultRoot(func(k string) string { return env[k] }); r != "/rt/proofgate-cache" {
		t.Fatalf("root %s", r)
	}
	env[EnvRoot] = "/x"
	if r, _ := DefaultRoot(func(k string) string { return env[k] }); r != "/x" {
		t.Fatalf("root %s", r)
	}
}

// TestWriterLeavesEscapingSymlink: a writable use that leaves a symlink out
// of the cache fails its release (the check becomes an error), records no
// state, and the cache is refused until the entry is gone.
func TestWriterLeavesEscapingSymlink(t *testing.T) {
	s := open(t, t.TempDir(), Default())
	l := acquire(t, s, rw)
	dir := l.Mounts()[0].Source
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	reason(t, l.Release(), ReasonSymlink)
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "go-mod.state")); err == nil {
		t.Fatal("a state was recorded")
	}
	_, err := s.Acquire(context.Background(), "r", "c", []Use{ro})
	reason(t, err, ReasonSymlink)
	os.Remove(filepath.Join(dir, "x"))
	acquire(t, s, ro).Release()
}
