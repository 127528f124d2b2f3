//go:build unix

package cache

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSpecialFileRefused: a FIFO in a cache is refused, never opened (a
// host reader would hang on it).
func TestSpecialFileRefused(t *testing.T) {
	s := open(t, t.TempDir(), Local())
	l := acquire(t, s, rw)
	dir := l.Mounts()[0].Source
	l.Release()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := s.Acquire(context.Background(), "r", "c", []Use{ro})
	reason(t, err, ReasonSpecial)
}

// TestChangedBetweenChecksOfOneRun: every lease walks its tree again, so
// nothing found by one check's walks is trusted for the next: an escaping
// symlink or a FIFO added after one read-only check released the cache is
// refused at the next check's Acquire, before any mount; a directory
// swapped for a symlink to the same place while mounted read-only, or a
// file rewritten behind the same size and mtime, fails the release.
func TestChangedBetweenChecksOfOneRun(t *testing.T) {
	s := open(t, t.TempDir(), Local())
	l := acquire(t, s, rw)
	dir := l.Mounts()[0].Source
	write(t, filepath.Join(dir, "mod", "a.go"), "package a")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	first := acquire(t, s, ro)
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		add  func(p string) error
		want Reason
	}{
		{func(p string) error { return os.Symlink("/etc/shadow", p) }, ReasonSymlink},
		{func(p string) error { return os.Symlink("../../..", p) }, ReasonSymlink},
		{func(p string) error { return syscall.Mkfifo(p, 0o666) }, ReasonSpecial},
	} {
		p := filepath.Join(dir, "mod", "added")
		if err := bad.add(p); err != nil {
			t.Fatal(err)
		}
		_, err := s.Acquire(context.Background(), "run-1", "second", []Use{ro})
		reason(t, err, bad.want)
		os.Remove(p)
	}
	// Swapped while mounted: the directory becomes a symlink to a copy.
	l = acquire(t, s, ro)
	if err := os.Rename(filepath.Join(dir, "mod"), filepath.Join(dir, "mod2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mod2", filepath.Join(dir, "mod")); err != nil {
		t.Fatal(err)
	}
	reason(t, l.Release(), ReasonChanged)
	os.Remove(filepath.Join(dir, "mod"))
	os.Rename(filepath.Join(dir, "mod2"), filepath.Join(dir, "mod"))
	// Rewritten in place, same size, mtime put back: the digest cannot
	// see it, the stamp (ctime) does.
	l = acquire(t, s, ro)
	f := filepath.Join(dir, "mod", "a.go")
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte("package b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if after, err := walkTree(dir, false); err != nil || after.Digest != l.Mounts()[0].Digest {
		t.Fatalf("the digest changed too (%v): this test wants the stamp alone to see it", err)
	}
	reason(t, l.Release(), ReasonChanged)
}

// TestWritableUseOpensRestoredTree: a tree as actions/cache restores it
// and the workflow hands it to the harness (0755 directories, the cache
// directory itself included, 0644 files) becomes writable by the sandbox
// user at a writable use — 0777 directories, 0666 files, 0444 files kept
// read-only — and is left as it is by a read-only use.
func TestWritableUseOpensRestoredTree(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "local", "go-mod")
	write(t, filepath.Join(dir, "top.txt"), "x")
	write(t, filepath.Join(dir, "sub", "f"), "y")
	write(t, filepath.Join(dir, "sub", "ro"), "z")
	for p, m := range map[string]os.FileMode{dir: 0o755, filepath.Join(dir, "sub"): 0o755, filepath.Join(dir, "sub", "ro"): 0o444} {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	mode := func(p string) os.FileMode {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	s := open(t, root, Local())
	acquire(t, s, ro).Release()
	if mode(".") != 0o755 || mode("top.txt") != 0o644 {
		t.Fatalf("a read-only use changed modes: %v %v", mode("."), mode("top.txt"))
	}
	l := acquire(t, s, rw)
	for p, want := range map[string]os.FileMode{".": 0o777, "sub": 0o777, "top.txt": 0o666, "sub/f": 0o666, "sub/ro": 0o444} {
		if got := mode(p); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
