package process

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// Where a check's PATH came from (Lookup.PathFrom).
const (
	PathFromEnv     = "env"           // the check's env declares PATH
	PathFromHost    = "env_from_host" // the harness's PATH, named in env_from_host
	PathFromDefault = "default"       // neither: DefaultPath
)

// Executable is the file a check's argv[0] resolved to.
type Executable struct {
	// Path is the absolute path execve runs: the first match on the
	// search path for a bare name, else argv[0] against the working
	// directory.
	Path string
	// Resolved is Path with its symlinks evaluated, "" when it is Path
	// itself (or when evaluating failed).
	Resolved string
	// Script is true when the file starts with "#!": an interpreter
	// script, such as a version manager's shim. Find sets it; Run does
	// not read the file.
	Script bool
}

// profile is the attestation's "executable" member: {"path","resolved"?}.
func (e Executable) profile() map[string]any {
	m := map[string]any{"path": e.Path}
	if e.Resolved != "" {
		m["resolved"] = e.Resolved
	}
	return m
}

// Lookup is how Run would resolve a spec's command.
type Lookup struct {
	Executable Executable
	// SearchPath is the PATH searched, and PathFrom where it came from
	// (PathFromEnv, PathFromHost, PathFromDefault).
	SearchPath string
	PathFrom   string
}

// Find resolves spec's argv[0] exactly as Run would, with hostEnv as the
// harness's environment (os.LookupEnv for this process): PATH from the
// check's env, else from the harness when env_from_host names it, else
// DefaultPath; a bare name is the first executable match on it. It starts
// nothing. A bare name found nowhere is a *NotFoundError, which says
// which PATH was searched.
func Find(spec runtime.Spec, hostEnv func(string) (string, bool)) (Lookup, error) {
	var l Lookup
	l.SearchPath, l.PathFrom = searchPath(withHostEnv(spec.Env, spec.FromHost, hostEnv))
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return l, errors.New("argv: empty")
	}
	wd, err := workDir(spec.Workspace, spec.Dir)
	if err != nil {
		return l, err
	}
	bin, err := lookPath(spec.Argv[0], l.SearchPath, wd, l.PathFrom)
	if err != nil {
		return l, err
	}
	l.Executable = describe(bin)
	l.Executable.Script = isScript(bin)
	return l, nil
}

// searchPath is the PATH a check's executable is looked up in, and where
// it came from: env (with the harness variables merged in) and what
// withHostEnv recorded of them.
func searchPath(env map[string]string, fromHost map[string]any) (path, from string) {
	p, ok := env["PATH"]
	switch {
	case !ok:
		return DefaultPath, PathFromDefault
	case fromHost["PATH"] != nil:
		return p, PathFromHost
	}
	return p, PathFromEnv
}

// describe records bin and what its symlinks resolve to.
func describe(bin string) Executable {
	e := Executable{Path: bin}
	if r, err := filepath.EvalSymlinks(bin); err == nil && r != bin {
		e.Resolved = r
	}
	return e
}

// isScript reports whether the regular file at p starts with "#!" (a
// FIFO or device is not opened: that could block).
func isScript(p string) bool {
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "#!"
}

// NotFoundError is a bare argv[0] that no entry of the search path holds
// as an executable file.
type NotFoundError struct {
	Name       string
	SearchPath string
	PathFrom   string // PathFromEnv, PathFromHost or PathFromDefault
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("executable %q not found in %s %q", e.Name, pathSource(e.PathFrom), e.SearchPath)
}

// pathSource words where a PATH came from in an error.
func pathSource(from string) string {
	switch from {
	case PathFromEnv:
		return "declared PATH"
	case PathFromHost:
		return "PATH from the harness (env_from_host)"
	}
	return "default PATH"
}

// workDir resolves the check's working directory and refuses one outside the
// workspace, lexically or through a symlink.
func workDir(workspace, dir string) (string, error) {
	if !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("workspace %q: not an absolute path", workspace)
	}
	if dir != "" && !filepath.IsLocal(dir) {
		return "", fmt.Errorf("dir %q: escapes the workspace", dir)
	}
	wd := filepath.Join(workspace, dir)
	fi, err := os.Stat(wd)
	if err != nil {
		return "", fmt.Errorf("working directory %s: %w", wd, unwrapPath(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("working directory %s: not a directory", wd)
	}
	if dir != "" {
		rw, err1 := filepath.EvalSymlinks(workspace)
		rd, err2 := filepath.EvalSymlinks(wd)
		if err := errors.Join(err1, err2); err != nil {
			return "", fmt.Errorf("working directory %s: %w", wd, err)
		}
		if rel, err := filepath.Rel(rw, rd); err != nil || !filepath.IsLocal(rel) && rel != "." {
			return "", fmt.Errorf("dir %q: resolves to %s, outside the workspace", dir, rd)
		}
	}
	return wd, nil
}

// lookPath finds name the way execvp would from the check's working
// directory: a name with a slash is used as it is (relative to wd), a bare
// name is searched in path, relative entries resolved against wd.
func lookPath(name, path, wd, from string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("executable %s: %w", name, err)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(wd, d)
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", &NotFoundError{Name: name, SearchPath: path, PathFrom: from}
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return unwrapPath(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// unwrapPath drops the *PathError wrapper whose path the caller already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// withHostEnv returns env plus the harness variables names (looked up with
// lookup), and what the attestation records of them: each name mapped to
// "sha256:<hex>" of its value, or null when the harness does not have it.
// Digests, not values: a name such as a token must not leak into a signed
// bundle, while the digest still binds the value (PATH's value is attested
// in clear as "path" anyway). env is not modified.
func withHostEnv(env map[string]string, names []string, lookup func(string) (string, bool)) (map[string]string, map[string]any) {
	if len(names) == 0 {
		return env, nil
	}
	out := make(map[string]string, len(env)+len(names))
	maps.Copy(out, env)
	rec := make(map[string]any, len(names))
	for _, k := range names {
		v, ok := lookup(k)
		if !ok {
			rec[k] = nil
			continue
		}
		out[k] = v
		sum := sha256.Sum256([]byte(v))
		rec[k] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return out, rec
}
