//go:build linux

package cache

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// randomTree fills dir with n entries: nested directories (some 0755,
// some setgid or sticky), files of assorted modes, sizes and mtimes, and
// in-tree relative symlinks; names include ones that sort differently as
// whole paths than per directory ("a-b" vs "a/b").
func randomTree(t *testing.T, dir string, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	dirs := []string{dir}
	names := []string{"a", "a-b", "a.b", "a0", "b", "@v", "Z", "ü", "long-" + strings.Repeat("x", 200)}
	for i := range n {
		parent := dirs[r.IntN(len(dirs))]
		name := fmt.Sprintf("%s%d", names[r.IntN(len(names))], i%7)
		p := filepath.Join(parent, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		var err error
		switch k := r.IntN(10); {
		case k < 3:
			if err = os.Mkdir(p, 0o755); err == nil {
				dirs = append(dirs, p)
				switch r.IntN(4) {
				case 0:
					err = os.Chmod(p, 0o755|fs.ModeSetgid)
				case 1:
					err = os.Chmod(p, 0o777|fs.ModeSticky)
				}
			}
		case k < 9:
			if err = os.WriteFile(p, make([]byte, r.IntN(3000)), 0o644); err == nil {
				mt := time.Unix(int64(r.IntN(2e9)), int64(r.IntN(1e9)))
				if err = os.Chtimes(p, mt, mt); err == nil && r.IntN(3) == 0 {
					err = os.Chmod(p, 0o444)
				}
			}
		default:
			err = os.Symlink(strings.Repeat("../", strings.Count(strings.TrimPrefix(parent, dir), "/"))+"a0", p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestWalkMatchesPortable: the Linux walk gives byte for byte the digest,
// stamp and counts of the portable one (so digests already recorded in
// evidence and state records keep their meaning), opens directories for
// the sandbox the same way, and refuses the same entries for the same
// reasons.
func TestWalkMatchesPortable(t *testing.T) {
	for seed := range uint64(6) {
		dir := t.TempDir()
		randomTree(t, dir, 50+int(seed)*400, seed)
		want, err := walkTreePortable(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := walkTree(dir, false)
		if err != nil || got != want {
			t.Fatalf("seed %d: linux %+v %v, portable %+v", seed, got, err, want)
		}
		if want.Entries < 40 {
			t.Fatalf("seed %d: only %d entries", seed, want.Entries)
		}
	}
	// Opening for the sandbox: each walk reports the tree as it left it,
	// which the other walk then reads back identically.
	a, b := t.TempDir(), t.TempDir()
	randomTree(t, a, 300, 9)
	randomTree(t, b, 300, 9)
	pa, err := walkTreePortable(a, openForSandbox)
	if err != nil {
		t.Fatal(err)
	}
	if la, err := walkTree(a, false); err != nil || la != pa {
		t.Fatalf("after the portable open: linux %+v %v, portable %+v", la, err, pa)
	}
	lb, err := walkTree(b, true)
	if err != nil {
		t.Fatal(err)
	}
	if pb, err := walkTreePortable(b, nil); err != nil || pb != lb {
		t.Fatalf("after the linux open: portable %+v %v, linux %+v", pb, err, lb)
	}
	filepath.WalkDir(b, func(p string, de fs.DirEntry, err error) error {
		fi, _ := de.Info()
		switch m := fi.Mode(); {
		case p != b && m.IsDir() && m.Perm() != 0o777:
			t.Errorf("%s left mode %v", p, m)
		case m.IsRegular() && m.Perm() != 0o666 && m.Perm() != 0o444:
			t.Errorf("%s left mode %v (want 0666, or 0444 kept read-only)", p, m)
		}
		return err
	})
	for _, bad := range []struct {
		make func(p string) error
		want Reason
	}{
		{func(p string) error { return syscall.Mkfifo(p, 0o666) }, ReasonSpecial},
		{func(p string) error { return os.Symlink("../../../etc/passwd", p) }, ReasonSymlink},
		{func(p string) error { return os.Symlink("/etc/passwd", p) }, ReasonSymlink},
	} {
		dir := t.TempDir()
		randomTree(t, dir, 200, 3)
		if err := bad.make(filepath.Join(dir, "a-b1", "zz-bad")); err != nil {
			if err := os.MkdirAll(filepath.Join(dir, "a-b1"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := bad.make(filepath.Join(dir, "a-b1", "zz-bad")); err != nil {
				t.Fatal(err)
			}
		}
		_, perr := walkTreePortable(dir, nil)
		reason(t, perr, bad.want)
		_, lerr := walkTree(dir, false)
		reason(t, lerr, bad.want)
		if perr.Error() != lerr.Error() {
			t.Errorf("linux %q, portable %q", lerr, perr)
		}
	}
}

// TestWalkTooDeep: a tree nested deeper than maxDepth is refused
// (ReasonTooLarge) rather than walked with one descriptor per level.
func TestWalkTooDeep(t *testing.T) {
	dir := t.TempDir()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range maxDepth + 1 {
		if err := syscall.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := syscall.Openat(fd, "d", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		syscall.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	syscall.Close(fd)
	_, err = walkTree(dir, false)
	reason(t, err, ReasonTooLarge)
}
