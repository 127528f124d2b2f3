package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// EnvRoot names the environment variable that sets the cache root.
const EnvRoot = "PROOFGATE_CACHE_ROOT"

// lockPoll is how often a busy lock is retried.
const lockPoll = 20 * time.Millisecond

// maxState bounds a <name>.state record.
const maxState = 4096

// DefaultRoot is the cache root when none is given: $PROOFGATE_CACHE_ROOT,
// else $RUNNER_TEMP/proofgate-cache, else <user cache dir>/proofgate/caches.
func DefaultRoot(getenv func(string) string) (string, error) {
	if r := getenv(EnvRoot); r != "" {
		return r, nil
	}
	if t := getenv("RUNNER_TEMP"); t != "" {
		return filepath.Join(t, "proofgate-cache"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", &Error{Reason: ReasonRoot, Msg: "no cache root: set " + EnvRoot + " or --cache-root", Err: err}
	}
	return filepath.Join(d, "proofgate", "caches"), nil
}

// Store is a cache root and the scope a run uses it with.
type Store struct {
	root  string // absolute, symlinks resolved
	scope Scope
	// runScope is the directory of run-lifetime caches (run-<16 hex>) of
	// the RunDir this Store belongs to; "" outside one.
	runScope string
}

// Open creates (mode 0700) or opens the cache root for scope. The root must
// be absolute, and neither inside nor above repo (when repo is set): the
// work-tree digest would change with every write, and a readonly workspace
// would show every scope's caches to every check.
func Open(root string, scope Scope, repo string) (*Store, error) {
	if !filepath.IsAbs(root) {
		return nil, &Error{Reason: ReasonRoot, Msg: fmt.Sprintf("cache root %q is not absolute", root)}
	}
	if !validScope(scope.Name) || (scope.Base != "" && scope.Base != ScopeDefault) {
		return nil, &Error{Reason: ReasonUse, Msg: fmt.Sprintf("invalid scope %q (base %q)", scope.Name, scope.Base)}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, &Error{Reason: ReasonRoot, Msg: err.Error(), Err: err}
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, &Error{Reason: ReasonRoot, Msg: err.Error(), Err: err}
	}
	if repo != "" {
		rr, err := filepath.EvalSymlinks(repo)
		if err != nil {
			return nil, &Error{Reason: ReasonRoot, Msg: err.Error(), Err: err}
		}
		if within(real, rr) || within(rr, real) {
			return nil, &Error{Reason: ReasonRoot, Msg: fmt.Sprintf("cache root %s overlaps the repository %s: put it outside (--cache-root, %s)", real, rr, EnvRoot)}
		}
	}
	return &Store{root: real, scope: scope}, nil
}

// Root is the store's resolved root directory.
func (s *Store) Root() string { return s.root }

// Scope is the scope the store's runs write.
func (s *Store) Scope() Scope { return s.scope }

// Use is one check's use of one declared cache.
type Use struct {
	Name     string
	Mount    string
	ReadOnly bool
	// Run marks a run-lifetime cache: it is mounted from the RunDir's own
	// directory (see RunDir.Acquire), never from a scope.
	Run bool
}

// Lease is a check's hold on its caches, from Acquire to Release.
type Lease struct {
	store  *Store
	run    string
	check  string
	mounts []runtime.Cache
	stamps []string // the stamp each mount had at Acquire
	locks  []*os.File
}

// Mounts are the prepared directories, in the order of the uses.
func (l *Lease) Mounts() []runtime.Cache { return slices.Clone(l.mounts) }

// pick is where one use goes: the scope whose directory is mounted, and
// whether it must first be seeded from the base scope.
type pick struct {
	use   Use
	scope string
	seed  bool
}

// Acquire prepares uses for one check (see the package doc): it picks each
// use's directory, takes the locks in path order (waiting while another
// check holds them, until ctx ends), seeds a pull request's first writable
// copy from the default scope, checks and digests every tree. On error
// nothing stays locked.
func (s *Store) Acquire(ctx context.Context, run, check string, uses []Use) (*Lease, error) {
	l := &Lease{store: s, run: run, check: check}
	picks := make([]pick, len(uses))
	for i, u := range uses {
		if !validName(u.Name) || !filepath.IsAbs(u.Mount) {
			return nil, &Error{Cache: u.Name, Reason: ReasonUse, Msg: fmt.Sprintf("invalid use (mount %q)", u.Mount)}
		}
		p, err := s.choose(u)
		if err != nil {
			return nil, err
		}
		picks[i] = p
	}
	if err := l.lockAll(ctx, picks); err != nil {
		l.unlock()
		return nil, err
	}
	for _, p := range picks {
		m, stamp, err := s.prepare(p)
		if err != nil {
			l.unlock()
			return nil, err
		}
		l.mounts = append(l.mounts, m)
		l.stamps = append(l.stamps, stamp)
	}
	return l, nil
}

// choose picks the directory of one use: the run's own scope, except that
// a read-only use in a scope with a base reads the base while its own has
// nothing.
func (s *Store) choose(u Use) (pick, error) {
	if u.Run {
		if s.runScope == "" {
			return pick{}, &Error{Cache: u.Name, Reason: ReasonUse, Msg: "a run-lifetime cache is mounted only through the run's RunDir (Store.OpenRun)"}
		}
		return pick{use: u, scope: s.runScope}, nil
	}
	own := pick{use: u, scope: s.scope.Name}
	if s.scope.Base == "" {
		return own, nil
	}
	if err := s.checkDirs(u.Name, s.scope.Name); err != nil {
		return pick{}, err
	}
	_, err := os.Lstat(s.dir(s.scope.Name, u.Name))
	switch {
	case err == nil:
		return own, nil
	case !errors.Is(err, fs.ErrNotExist):
		return pick{}, ioErr(u.Name, s.scope.Name, err)
	}
	if err := s.checkDirs(u.Name, s.scope.Base); err != nil {
		return pick{}, err
	}
	_, err = os.Lstat(s.dir(s.scope.Base, u.Name))
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return pick{}, ioErr(u.Name, s.scope.Base, err)
	case err != nil:
		return own, nil // nothing to read anywhere: a fresh directory of its own
	case u.ReadOnly:
		return pick{use: u, scope: s.scope.Base}, nil
	}
	own.seed = true
	return own, nil
}

func (s *Store) dir(scope, name string) string { return filepath.Join(s.root, scope, name) }

// checkDirs refuses a root, scope directory or cache directory that is a
// symlink (or not a directory), where they exist.
func (s *Store) checkDirs(name, scope string) error {
	for _, p := range []string{s.root, filepath.Join(s.root, scope), s.dir(scope, name)} {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return ioErr(name, scope, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &Error{Cache: name, Scope: scope, Reason: ReasonSymlink, Msg: fmt.Sprintf("%s is a symlink: a cache directory must be a real directory under the cache root", p)}
		}
		if !fi.IsDir() {
			return &Error{Cache: name, Scope: scope, Reason: ReasonSymlink, Msg: fmt.Sprintf("%s is not a directory", p)}
		}
	}
	return nil
}

// lockAll takes every lock the picks need, in path order: exclusive on the
// mounted directory of a writable use, shared on a read-only one's, and
// shared on the base of a use that is seeded from it.
func (l *Lease) lockAll(ctx context.Context, picks []pick) error {
	type want struct {
		scope, name string
		excl        bool
	}
	byPath := map[string]want{}
	add := func(w want) {
		p := filepath.Join(l.store.root, w.scope, w.name+".lock")
		if old, ok := byPath[p]; !ok || w.excl && !old.excl {
			byPath[p] = w
		}
	}
	for _, p := range picks {
		add(want{p.scope, p.use.Name, !p.use.ReadOnly})
		if p.seed {
			add(want{l.store.scope.Base, p.use.Name, false})
		}
	}
	for _, path := range slices.Sorted(maps.Keys(byPath)) {
		w := byPath[path]
		f, err := l.store.lockFile(ctx, w.scope, w.name, w.excl)
		if err != nil {
			return err
		}
		l.locks = append(l.locks, f)
	}
	return nil
}

// lockRetries bounds how often lockFile reopens a lock file that was
// renamed away (a prune removing the scope) while it waited for it.
const lockRetries = 8

// Test hook: called when lockFile first finds its lock busy.
var lockBusyHook func(path string)

// lockFile opens <root>/<scope>/<name>.lock (creating the scope directory)
// and locks it, polling until ctx ends. A lock taken on a file that is no
// longer the one at its path (a prune renamed the scope away while this
// waited) is dropped and the lock file opened again.
func (s *Store) lockFile(ctx context.Context, scope, name string, excl bool) (*os.File, error) {
	for range lockRetries {
		f, err := s.lockOnce(ctx, scope, name, excl)
		if err != nil || f != nil {
			return f, err
		}
	}
	return nil, &Error{Cache: name, Scope: scope, Reason: ReasonIO, Msg: fmt.Sprintf("lock file replaced %d times while waiting for it", lockRetries)}
}

// lockOnce is one attempt of lockFile: nil and no error when the lock
// taken is not the file at the lock path.
func (s *Store) lockOnce(ctx context.Context, scope, name string, excl bool) (*os.File, error) {
	if err := s.checkDirs(name, scope); err != nil {
		return nil, err
	}
	sd := filepath.Join(s.root, scope)
	if err := os.Mkdir(sd, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, ioErr(name, scope, err)
	}
	path := filepath.Join(sd, name+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, ioErr(name, scope, err)
	}
	if err := waitLock(ctx, f, excl); err != nil {
		f.Close()
		return nil, &Error{Cache: name, Scope: scope, Reason: ReasonIO, Msg: err.Error(), Err: err}
	}
	held, err1 := f.Stat()
	now, err2 := os.Lstat(path)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// waitLock takes the flock on f, polling while it is busy until ctx ends.
func waitLock(ctx context.Context, f *os.File, excl bool) error {
	for first := true; ; first = false {
		busy, err := tryLock(f, excl)
		if err != nil {
			return err
		}
		if !busy {
			return nil
		}
		if first && lockBusyHook != nil {
			lockBusyHook(f.Name())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for another check using the cache: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

func (l *Lease) unlock() {
	for _, f := range l.locks {
		f.Close() // closing the last descriptor releases the flock
	}
	l.locks = nil
}

// prepare creates or seeds the picked directory, checks and digests it, and
// returns its mount and its stamp.
func (s *Store) prepare(p pick) (runtime.Cache, string, error) {
	name, scope := p.use.Name, p.scope
	if err := s.checkDirs(name, scope); err != nil {
		return runtime.Cache{}, "", err
	}
	dir := s.dir(scope, name)
	provenance := ""
	if p.seed {
		// Another check may have created it since choose, under its lock.
		if _, err := os.Lstat(dir); err == nil {
			p.seed = false
		}
	}
	if p.seed {
		if _, err := s.tree(name, s.scope.Base, false); err != nil {
			return runtime.Cache{}, "", err
		}
		if err := s.seed(name); err != nil {
			return runtime.Cache{}, "", err
		}
		provenance = "seeded"
	} else if err := os.Mkdir(dir, 0o777); err == nil {
		if err := os.Chmod(dir, 0o777); err != nil {
			return runtime.Cache{}, "", ioErr(name, scope, err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return runtime.Cache{}, "", ioErr(name, scope, err)
	}
	if !p.use.ReadOnly {
		// The cache directory itself too: the sandbox writes its top level.
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			openForSandbox(dir, fi)
		}
	}
	t, err := s.tree(name, scope, !p.use.ReadOnly)
	if err != nil {
		return runtime.Cache{}, "", err
	}
	st, err := s.readState(scope, name)
	if err != nil {
		return runtime.Cache{}, "", err
	}
	switch {
	case provenance != "":
	case st.Stamp != "" && st.Stamp == t.Stamp:
		provenance = "recorded"
	case st.Stamp == "" && t.Entries == 0:
		provenance = "empty"
	default:
		provenance = "unrecorded"
	}
	mode := runtime.CacheReadWrite
	if p.use.ReadOnly {
		mode = runtime.CacheReadOnly
	}
	c := runtime.Cache{Name: name, Mount: p.use.Mount, Mode: mode, Scope: scope, RunScope: s.scope.Name,
		Source: dir, Digest: t.Digest, Entries: t.Entries, Bytes: t.Bytes,
		Generation: st.Generation, Provenance: provenance, WrittenBy: st.WrittenBy}
	if p.use.Run {
		c.Lifetime = runtime.LifetimeRun
	}
	return c, t.Stamp, nil
}

// openForSandbox makes an entry the harness owns writable by the sandbox
// user, as seeding does: a directory becomes 0777, a regular file its
// owner could write (and not setuid or setgid) gains 0666. A tree restored
// by actions/cache and handed to root by the workflow's chown has 0755
// directories and 0644 files the sandbox user could not write. The
// portable walk's visit; the Linux walk does the same through descriptors.
// A file is changed through a descriptor opened without following a
// symlink and checked to be the entry walked, so a swap cannot redirect
// the chmod.
func openForSandbox(p string, fi fs.FileInfo) {
	m := fi.Mode()
	switch {
	case !ownedByMe(fi):
	case m.IsDir() && m.Perm() != 0o777:
		_ = os.Chmod(p, 0o777)
	case m.IsRegular() && widen(uint32(m.Perm()), m&(fs.ModeSetuid|fs.ModeSetgid) != 0):
		f, err := os.OpenFile(p, os.O_RDONLY|noFollow|nonBlock, 0)
		if err != nil {
			return
		}
		defer f.Close()
		if now, err := f.Stat(); err == nil && os.SameFile(now, fi) && now.Mode().IsRegular() {
			_ = f.Chmod(m.Perm() | 0o666)
		}
	}
}

// widen reports whether a regular file of permission bits perm is one the
// sandbox user should be given write access to: owner-writable, not yet
// 0666, not setuid or setgid.
func widen(perm uint32, setid bool) bool {
	return !setid && perm&0o200 != 0 && perm&0o666 != 0o666
}

// tree checks and digests one cache directory (and its parents); with
// openDirs its directories are made writable for the sandbox user.
func (s *Store) tree(name, scope string, openDirs bool) (Tree, error) {
	if err := s.checkDirs(name, scope); err != nil {
		return Tree{}, err
	}
	t, err := walkTree(s.dir(scope, name), openDirs)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.Cache, ce.Scope = name, scope
		}
		return Tree{}, err
	}
	return t, nil
}

// seed copies the base scope's directory into the run's own, through a
// temporary directory renamed into place.
func (s *Store) seed(name string) error {
	own := s.scope.Name
	tmp, err := os.MkdirTemp(filepath.Join(s.root, own), "."+name+".seed-")
	if err != nil {
		return ioErr(name, own, err)
	}
	defer os.RemoveAll(tmp)
	dst := filepath.Join(tmp, name)
	if err := copyTree(s.dir(s.scope.Base, name), dst); err != nil {
		return ioErr(name, own, fmt.Errorf("seeding from scope %s: %w", s.scope.Base, err))
	}
	if err := os.Rename(dst, s.dir(own, name)); err != nil {
		return ioErr(name, own, err)
	}
	return nil
}

// state is a <name>.state record.
type state struct {
	Generation int64  `json:"generation"`
	Digest     string `json:"digest"`
	Stamp      string `json:"stamp"`
	WrittenBy  string `json:"written_by"`
}

func (s *Store) readState(scope, name string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(s.root, scope, name+".state"))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, ioErr(name, scope, err)
	}
	if len(b) > maxState || strictjson.Decode(b, &st) != nil || st.Generation < 1 {
		// A broken record is no record: the tree counts as unrecorded.
		return state{}, nil
	}
	return st, nil
}

// Release ends the lease: for each read-only mount it recomputes the
// stamp and reports a change (ReasonChanged); for each writable one it
// records the new digest with the next generation. The locks are released
// in every case; the first error is returned.
func (l *Lease) Release() error {
	defer l.unlock()
	var first error
	for i, m := range l.mounts {
		if err := l.release(m, l.stamps[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (l *Lease) release(m runtime.Cache, before string) error {
	s := l.store
	t, err := s.tree(m.Name, m.Scope, false)
	if err != nil {
		return err
	}
	if m.Mode == runtime.CacheReadOnly {
		if t.Stamp != before {
			return &Error{Cache: m.Name, Scope: m.Scope, Reason: ReasonChanged,
				Msg: fmt.Sprintf("changed while mounted read-only (digest %s before the mount, %s after the check)", m.Digest, t.Digest)}
		}
		return nil
	}
	st, err := s.readState(m.Scope, m.Name)
	if err != nil {
		return err
	}
	next := state{Generation: st.Generation + 1, Digest: t.Digest, Stamp: t.Stamp, WrittenBy: l.run + "/" + l.check}
	b, err := json.Marshal(next)
	if err != nil {
		return ioErr(m.Name, m.Scope, err)
	}
	if err := writeState(filepath.Join(s.root, m.Scope, m.Name+".state"), b); err != nil {
		return ioErr(m.Name, m.Scope, err)
	}
	return nil
}

// writeState replaces a state record through a temporary file and a
// rename, without fsync: a record lost in a crash only makes the next
// mount's provenance "unrecorded", and an fsync per check costs more than
// the check's cache walk.
func writeState(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func validName(n string) bool {
	if n == "" || len(n) > 63 || strings.ContainsAny(n, "./\\\x00") {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

func ioErr(name, scope string, err error) error {
	return &Error{Cache: name, Scope: scope, Reason: ReasonIO, Msg: err.Error(), Err: err}
}
