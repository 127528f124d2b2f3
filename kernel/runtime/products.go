package runtime

import (
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/pathglob"
)

// Collector receives the files a passed check produced (the contract's
// produces:, ADR 0039). The kernel implements it: it stores each file
// content-addressed, enforces the bounds on count and size and records
// the digests.
type Collector interface {
	// Add stores the regular file at path (slash-separated, relative to
	// the workspace) of size bytes, read from r. An error stops the
	// collection; the check's outcome becomes error.
	Add(path string, size int64, r io.Reader) error
}

// Entry is one file system entry a provider found under a product root.
type Entry struct {
	Path string      // slash-separated, relative to the workspace
	Mode fs.FileMode // the type bits say what it is
	Size int64
}

// Products offers what a provider finds under ProductRoots to the
// collector: the regular files a glob matches. A matching entry that is not
// a regular file (a symlink, a hard link in an archive, a device) is
// refused; directories are passed over.
type Products struct {
	Globs   []string
	Collect Collector
}

// Offer hands e to the collector when a glob matches it. r reads its
// content.
func (p Products) Offer(e Entry, r io.Reader) error {
	if e.Mode.IsDir() || !Produced(p.Globs, e.Path) {
		return nil
	}
	if !e.Mode.IsRegular() {
		return fmt.Errorf("%s is %s: a check produces regular files only", e.Path, kindOf(e.Mode))
	}
	if p.Collect == nil {
		return fmt.Errorf("%s: no collector for the check's products", e.Path)
	}
	return p.Collect.Add(e.Path, e.Size, r)
}

// Produced reports whether path matches one of globs.
func Produced(globs []string, path string) bool {
	for _, g := range globs {
		if pathglob.Match(g, path) {
			return true
		}
	}
	return false
}

// ProductRoots are the paths (relative to the workspace, "" for the
// workspace itself) a provider walks to find what globs match: each glob's
// leading segments without a wildcard (the whole path for a glob without
// one, which names a file); a root under another root is left out.
func ProductRoots(globs []string) []string {
	var roots []string
	for _, g := range globs {
		segs := strings.Split(g, "/")
		n := 0
		for n < len(segs) && !strings.ContainsAny(segs[n], `*?\`) {
			n++
		}
		roots = append(roots, strings.Join(segs[:n], "/"))
	}
	var out []string
	for _, r := range roots {
		covered := false
		for _, o := range roots {
			if o != r && within(r, o) || o == r && contains(out, r) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, r)
		}
	}
	return out
}

// within reports whether dir is root or under it.
func within(dir, root string) bool {
	return root == "" || dir == root || strings.HasPrefix(dir, root+"/")
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// kindOf names what a product entry is instead of a regular file.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "a hard link" // what a daemon's archive holds for one
	}
	return (&bounded.NotRegularError{Mode: m}).Kind()
}
