package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// MaxEntries bounds the entries of one cache tree.
const MaxEntries = 1 << 21

// Tree is what a walk of a cache directory found.
type Tree struct {
	Digest  string // portable: paths, types, modes, sizes, mtimes
	Stamp   string // Digest's fields plus inodes and ctimes: change detection
	Entries int64
	Bytes   int64
}

// walkTreePortable checks and digests the tree under dir (dir itself
// excluded). It never follows a symlink, and refuses absolute symlinks,
// relative ones that leave dir, and special files. visit, if set, sees
// every directory and regular file (and may change its mode) before it is
// digested. The
// names come from one sequential walk; the per-entry lstat calls run on
// several goroutines. It is the walk on systems other than Linux, and the
// reference the Linux walk (walk_linux.go) is tested against.
func walkTreePortable(dir string, visit func(p string, fi fs.FileInfo)) (Tree, error) {
	type entry struct{ path, rel string }
	var ents []entry
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if len(ents) >= MaxEntries {
			return &Error{Reason: ReasonTooLarge, Msg: fmt.Sprintf("more than %d entries", MaxEntries)}
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		ents = append(ents, entry{p, filepath.ToSlash(rel)})
		return nil
	})
	if err != nil {
		return Tree{}, asCacheError(err)
	}
	infos := make([]fs.FileInfo, len(ents))
	errs := make([]error, len(ents))
	parallel(len(ents), func(i int) { infos[i], errs[i] = os.Lstat(ents[i].path) })
	var t Tree
	d, s := sha256.New(), sha256.New()
	for i, e := range ents {
		if errs[i] != nil {
			return Tree{}, asCacheError(errs[i])
		}
		fi := infos[i]
		if visit != nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			visit(e.path, fi)
			if fi, err = os.Lstat(e.path); err != nil {
				return Tree{}, asCacheError(err)
			}
		}
		line, err := entryLine(e.path, e.rel, fi)
		if err != nil {
			return Tree{}, asCacheError(err)
		}
		t.Entries++
		if fi.Mode().IsRegular() {
			t.Bytes += fi.Size()
		}
		io.WriteString(d, line)
		ino, ctime := fileIdentity(fi)
		io.WriteString(s, line[:len(line)-1]+" "+strconv.FormatUint(ino, 10)+" "+strconv.FormatInt(ctime, 10)+"\n")
	}
	t.Digest, t.Stamp = sum(d), sum(s)
	return t, nil
}

// walkers is how many goroutines lstat a tree's entries.
const walkers = 8

// parallel calls f(0..n-1) on up to walkers goroutines, each taking
// a contiguous range.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	chunk := (n + walkers - 1) / walkers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				f(i)
			}
		}()
	}
	wg.Wait()
}

func asCacheError(err error) error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	return &Error{Reason: ReasonIO, Msg: err.Error(), Err: err}
}

func sum(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// entryLine is one entry's digest line; it refuses what a cache may not hold.
func entryLine(p, rel string, fi fs.FileInfo) (string, error) {
	m := fi.Mode()
	base := fmt.Sprintf("%o %d %d %s", m.Perm()|m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), fi.Size(), fi.ModTime().UnixNano(), rel)
	switch {
	case m.IsDir():
		return "d " + base + "\n", nil
	case m.IsRegular():
		return "f " + base + "\n", nil
	case m&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if escapes(rel, target) {
			return "", &Error{Reason: ReasonSymlink, Msg: fmt.Sprintf("%s is a symlink to %q, which leaves the cache directory", rel, target)}
		}
		return "l " + base + " -> " + target + "\n", nil
	}
	return "", &Error{Reason: ReasonSpecial, Msg: fmt.Sprintf("%s is a %s, not a directory, regular file or symlink", rel, m.Type())}
}

// escapes reports whether a symlink at rel (slash path inside the cache)
// with this target is absolute or resolves, lexically, outside the cache.
func escapes(rel, target string) bool {
	if target == "" || path.IsAbs(target) || filepath.IsAbs(target) || strings.Contains(target, "\\") {
		return true
	}
	j := path.Join(path.Dir(rel), target)
	return j == ".." || strings.HasPrefix(j, "../")
}

// copyTree copies the checked tree src into dst (which must not exist):
// directories get mode 0777 and files whose owner could write them 0666
// (others keep their mode: a module cache's 0444 files stay read-only), so
// that the sandbox user can write the copy as it wrote the original;
// symlinks are copied as symlinks.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		fi, err := de.Info()
		if err != nil {
			return err
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			if err := os.Mkdir(out, 0o777); err != nil {
				return err
			}
			return os.Chmod(out, 0o777)
		case m.IsRegular():
			perm := m.Perm()
			if perm&0o200 != 0 {
				perm |= 0o666 // writable stays writable, for the sandbox user too
			}
			return copyFile(p, out, perm)
		case m&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(t, out)
		}
		return fmt.Errorf("%s: not a directory, regular file or symlink", rel)
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.OpenFile(src, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}
