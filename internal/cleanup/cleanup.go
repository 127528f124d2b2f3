// Package cleanup removes what a contract's cleanup roots hold, and nothing
// else (docs/SPEC.md "Cleanup roots").
//
// A contract declares `cleanup: [paths]`: directories relative to the
// repository whose contents `proofgate clean --apply` removes (the root
// directories themselves stay). kernel/contract checks each root lexically
// (relative, clean, no "..", never .git or .proofgate); Clean checks it again
// on the filesystem at the time of cleaning, and refuses the whole operation
// before removing anything when a root
//
//   - has a symlink as any component (ReasonSymlink), is not a directory
//     (ReasonNotDirectory), or changes while it is opened (ReasonSwapped);
//   - is, is inside, or contains the state directory in use (ReasonStateDir);
//   - holds more than MaxEntries entries in all (ReasonTooMany).
//
// Every path is opened through an os.Root on the repository, one component
// at a time (openat with no symlink followed out of the tree): a component
// swapped for a symlink between the check and the open cannot lead outside
// the repository, and the opened directory is compared (device and inode)
// with the one checked. Entries are removed by name relative to the opened
// root directory: an entry that is (or, between listing and removal, is
// swapped for) a symlink is removed as a link; its target is never touched.
// An entry named .git inside a root is kept (Skipped).
//
// A root that does not exist is reported Missing, not refused. Entries are
// top-level names of each root, sorted by byte order; Path is relative to
// the repository, slash-separated.
package cleanup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/kernel/contract"
)

// MaxEntries bounds the entries one Clean lists (over all roots), so the
// record of a cleanup stays one bounded event line.
const MaxEntries = 512

// Reason is the typed cause of a refused cleanup.
type Reason string

// Reasons.
const (
	ReasonInvalid      Reason = "invalid-root"
	ReasonSymlink      Reason = "symlink-root"
	ReasonNotDirectory Reason = "not-directory"
	ReasonSwapped      Reason = "root-swapped"
	ReasonOutside      Reason = "outside-repository"
	ReasonStateDir     Reason = "state-directory"
	ReasonTooMany      Reason = "too-many-entries"
	ReasonIO           Reason = "io"
)

// Error is a refused cleanup: the root and why.
type Error struct {
	Root   string
	Reason Reason
	Detail string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("cleanup root %q refused: %s: %s", e.Root, e.Reason, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

// Entry is one top-level entry of a cleanup root.
type Entry struct {
	Path string `json:"path"` // relative to the repository
	Kind string `json:"kind"` // file | dir | symlink | other
}

// Root is what one cleanup root held.
type Root struct {
	Root    string  `json:"root"`
	Missing bool    `json:"missing,omitempty"`
	Entries []Entry `json:"entries"`
	Skipped []Entry `json:"skipped,omitempty"`
}

// Result is a cleanup: what was (Applied) or would be removed.
type Result struct {
	Applied bool   `json:"applied"`
	Roots   []Root `json:"roots"`
}

// Removed counts the entries removed (or to be removed).
func (r *Result) Removed() int {
	n := 0
	for _, rt := range r.Roots {
		n += len(rt.Entries)
	}
	return n
}

// beforeRemove, when set (tests), runs after every root is listed and
// before anything is removed: the window a swapped symlink would use.
var beforeRemove func()

// afterLstat, when set (tests), runs between a component's check and its
// open: the window a swapped component would use.
var afterLstat func(component string)

// Clean lists, and with apply removes, the entries of each root of the
// repository at repo. stateDir is the state directory in use (absolute or
// relative to the working directory). A refusal (*Error) before removal
// returns a nil result; a failure during removal returns what was removed.
func Clean(repo, stateDir string, roots []string, apply bool) (*Result, error) {
	top, err := os.OpenRoot(repo)
	if err != nil {
		return nil, &Error{Root: ".", Reason: ReasonIO, Detail: err.Error(), Err: err}
	}
	defer top.Close()
	state, err := stateRel(repo, stateDir)
	if err != nil {
		return nil, err
	}
	res := &Result{Applied: apply, Roots: []Root{}}
	var opened []*os.Root
	defer func() {
		for _, o := range opened {
			o.Close()
		}
	}()
	total := 0
	for _, r := range roots {
		if err := checkLexical(r, state); err != nil {
			return nil, err
		}
		sub, missing, err := openRoot(top, r)
		if err != nil {
			return nil, err
		}
		rt := Root{Root: r, Missing: missing, Entries: []Entry{}}
		if !missing {
			opened = append(opened, sub)
			if err := list(sub, &rt, MaxEntries-total); err != nil {
				return nil, err
			}
		}
		total += len(rt.Entries) + len(rt.Skipped)
		res.Roots = append(res.Roots, rt)
	}
	if !apply {
		return res, nil
	}
	if beforeRemove != nil {
		beforeRemove()
	}
	return removeAll(res, opened)
}

// checkLexical refuses a root the contract loader would refuse, and one
// that is, is inside or contains the state directory (state is its path
// relative to the repository, "" when it lies outside).
func checkLexical(r, state string) error {
	if why := contract.CleanupRootProblem(r); why != "" {
		return &Error{Root: r, Reason: ReasonInvalid, Detail: why}
	}
	if state != "" && (state == "." || r == state || strings.HasPrefix(r, state+"/") || strings.HasPrefix(state, r+"/")) {
		return &Error{Root: r, Reason: ReasonStateDir, Detail: fmt.Sprintf("the state directory %s is, holds or lies inside this root", state)}
	}
	return nil
}

// stateRel is the state directory relative to the repository, both with
// symlinks resolved; "" when it is outside the repository or absent.
func stateRel(repo, stateDir string) (string, error) {
	rr, err := filepath.EvalSymlinks(repo)
	if err != nil {
		return "", &Error{Root: ".", Reason: ReasonIO, Detail: err.Error(), Err: err}
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return "", &Error{Root: ".", Reason: ReasonIO, Detail: err.Error(), Err: err}
	}
	if s, err := filepath.EvalSymlinks(abs); err == nil {
		abs = s
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", &Error{Root: ".", Reason: ReasonIO, Detail: err.Error(), Err: err}
	}
	rel, err := filepath.Rel(rr, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

// openRoot opens root one component at a time below top, refusing a
// symlink or a non-directory at any component and a component that
// changed between its check and its open.
func openRoot(top *os.Root, root string) (sub *os.Root, missing bool, err error) {
	cur := top
	for _, c := range strings.Split(root, "/") {
		next, gone, err := openComponent(cur, root, c)
		if cur != top {
			cur.Close()
		}
		if err != nil || gone {
			return nil, gone, err
		}
		cur = next
	}
	return cur, false, nil
}

func openComponent(cur *os.Root, root, c string) (*os.Root, bool, error) {
	fi, err := cur.Lstat(c)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, &Error{Root: root, Reason: ReasonIO, Detail: err.Error(), Err: err}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, false, &Error{Root: root, Reason: ReasonSymlink, Detail: fmt.Sprintf("component %q is a symlink (a cleanup root must be a real directory of the repository)", c)}
	}
	if !fi.IsDir() {
		return nil, false, &Error{Root: root, Reason: ReasonNotDirectory, Detail: fmt.Sprintf("component %q is not a directory", c)}
	}
	if afterLstat != nil {
		afterLstat(c)
	}
	next, err := cur.OpenRoot(c)
	if err != nil {
		return nil, false, &Error{Root: root, Reason: ReasonOutside, Detail: fmt.Sprintf("component %q: %v", c, err), Err: err}
	}
	now, err := next.Stat(".")
	if err != nil || !os.SameFile(fi, now) {
		next.Close()
		return nil, false, &Error{Root: root, Reason: ReasonSwapped, Detail: fmt.Sprintf("component %q changed while it was opened", c)}
	}
	return next, false, nil
}

// list fills rt with the root's top-level entries, at most room of them.
func list(sub *os.Root, rt *Root, room int) error {
	d, err := sub.Open(".")
	if err != nil {
		return &Error{Root: rt.Root, Reason: ReasonIO, Detail: err.Error(), Err: err}
	}
	defer d.Close()
	ents, err := d.ReadDir(room + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return &Error{Root: rt.Root, Reason: ReasonIO, Detail: err.Error(), Err: err}
	}
	if len(ents) > room {
		return &Error{Root: rt.Root, Reason: ReasonTooMany, Detail: fmt.Sprintf("more than %d entries in the cleanup roots together; clean a narrower root", MaxEntries)}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		en := Entry{Path: rt.Root + "/" + e.Name(), Kind: kind(e.Type())}
		if e.Name() == ".git" {
			rt.Skipped = append(rt.Skipped, en)
			continue
		}
		rt.Entries = append(rt.Entries, en)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "dir"
	case m.IsRegular():
		return "file"
	}
	return "other"
}

// removeAll removes each listed entry by name inside its opened root. On
// a failure the result returned lists what was removed before it.
func removeAll(res *Result, opened []*os.Root) (*Result, error) {
	done := &Result{Applied: true, Roots: []Root{}}
	i := 0
	for _, rt := range res.Roots {
		out := Root{Root: rt.Root, Missing: rt.Missing, Entries: []Entry{}, Skipped: rt.Skipped}
		if rt.Missing {
			done.Roots = append(done.Roots, out)
			continue
		}
		sub := opened[i]
		i++
		for _, e := range rt.Entries {
			if err := sub.RemoveAll(e.Path[len(rt.Root)+1:]); err != nil {
				done.Roots = append(done.Roots, out)
				return done, &Error{Root: rt.Root, Reason: ReasonIO, Detail: fmt.Sprintf("remove %s: %v", e.Path, err), Err: err}
			}
			out.Entries = append(out.Entries, e)
		}
		done.Roots = append(done.Roots, out)
	}
	return done, nil
}
