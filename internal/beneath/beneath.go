// Package beneath resolves a relative path inside a directory tree without
// following any link out of it: the check ProofGate makes on every tool
// argument of type path before the tool (which opens the path itself, in
// the work tree) runs, and again after it ran.
//
// On Linux the path is resolved by the kernel, openat2(2) with
// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS relative to the root (Linux 5.6
// and later): an absolute link, a ../ link or a chain of links that leaves
// the tree, and a /proc magic link, fail as a whole, with no window
// between the walk and its result. Elsewhere, and on an older kernel,
// os.Root does the same walk component by component. A link that stays
// inside the tree is followed.
package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Entry is what a path names inside the tree: a regular file or a
// directory (Info), or nothing yet (Info nil: the deepest ancestor that
// exists is a directory inside the tree, so a tool may create it).
type Entry struct {
	Path string
	Info fs.FileInfo
}

// Error refuses a path: it leaves the tree, or names something a tool
// must not be handed (a named pipe, a device, a socket).
type Error struct {
	Path string
	Why  string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Path, e.Why) }
func (e *Error) Unwrap() error { return e.Err }

// ErrOutside is wrapped by an Error for a path that resolves outside the
// tree.
var ErrOutside = errors.New("resolves outside the work tree")

// statFn is stat; the tests run os.Root's walk through it as well.
var statFn = stat

// Resolve resolves rel (slash-separated, relative) inside root.
func Resolve(root, rel string) (Entry, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return Entry{}, &Error{Path: rel, Why: "not a local path (absolute, or with a \"..\" element)", Err: ErrOutside}
	}
	for p := path.Clean(rel); ; p = path.Dir(p) {
		fi, err := statFn(root, p)
		switch {
		case err == nil && p == path.Clean(rel):
			return Entry{Path: rel, Info: fi}, kind(rel, fi)
		case err == nil && fi.IsDir():
			return Entry{Path: rel}, nil // missing below a directory in the tree
		case err == nil:
			return Entry{}, &Error{Path: rel, Why: p + " is not a directory"}
		case errors.Is(err, ErrOutside):
			return Entry{}, &Error{Path: rel, Why: describe(p, rel) + ErrOutside.Error() + " through a link; give a path inside it", Err: ErrOutside}
		case !errors.Is(err, fs.ErrNotExist) || p == ".":
			return Entry{}, &Error{Path: rel, Why: err.Error(), Err: err}
		}
	}
}

func describe(p, rel string) string {
	if p == path.Clean(rel) {
		return ""
	}
	return p + " "
}

// kind refuses what a tool must not be handed: a named pipe (its open
// blocks), a device, a socket.
func kind(rel string, fi fs.FileInfo) error {
	switch t := fi.Mode().Type(); {
	case t == 0 || t == fs.ModeDir:
		return nil
	case t&fs.ModeNamedPipe != 0:
		return &Error{Path: rel, Why: "a named pipe (FIFO), not a file or directory"}
	case t&fs.ModeDevice != 0:
		return &Error{Path: rel, Why: "a device, not a file or directory"}
	case t&fs.ModeSocket != 0:
		return &Error{Path: rel, Why: "a socket, not a file or directory"}
	}
	return &Error{Path: rel, Why: "not a file or directory (" + fi.Mode().Type().String() + ")"}
}

// statRoot is stat through os.Root: links followed inside root, an escape
// refused.
func statRoot(root, rel string) (fs.FileInfo, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Stat(rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && isEscape(err) {
		return nil, ErrOutside
	}
	return fi, err
}

// isEscape tells os.Root's refusal of a path leaving the root from other
// errors (it has no exported sentinel).
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
