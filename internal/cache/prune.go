package cache

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultPruneMaxEntries bounds the walk that counts a scope's bytes.
const DefaultPruneMaxEntries = 1_000_000

// pruningPrefix starts the name a scope is renamed to before its removal:
// <root>/.pruning-<scope>-<8 hex>, unreachable by any scope name.
const pruningPrefix = ".pruning-"

// ReasonScope: a scope named for pruning is invalid, protected (default,
// local) or absent.
const ReasonScope Reason = "scope"

// Action is what Prune did, or would do, with a scope.
type Action string

// Actions.
const (
	ActionRemoved     Action = "removed"
	ActionWouldRemove Action = "would-remove"
	ActionInUse       Action = "in-use"
	ActionSkipped     Action = "skipped"
)

// PruneOptions select the scopes Prune removes. At least one of OlderThan
// and Scopes is required; with both, a scope must be named and old.
type PruneOptions struct {
	// OlderThan selects scopes whose newest activity is older than
	// Now()-OlderThan; 0 selects by name only.
	OlderThan time.Duration
	// Scopes names scopes (pr-<N>, branch-<16 hex>, commit-<sha>) to remove.
	Scopes []string
	// Apply removes; false is a dry run that changes nothing.
	Apply bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MaxEntries bounds each scope's byte count walk (0: the default).
	MaxEntries int
}

// ScopeReport is one scope (or leftover) and what Prune did with it.
type ScopeReport struct {
	Name string `json:"name"`
	// Activity is the newest mtime of the scope directory and its direct
	// entries (locks, states, cache directories).
	Activity time.Time `json:"newest_activity,omitzero"`
	// Bytes sums the regular files under the scope; a lower bound when
	// BytesTruncated (the walk stopped at MaxEntries).
	Bytes          int64  `json:"bytes"`
	BytesTruncated bool   `json:"bytes_truncated,omitempty"`
	Action         Action `json:"action"`
	Reason         string `json:"reason,omitempty"`
}

// PruneReport is what one Prune found and did.
type PruneReport struct {
	Root      string        `json:"root"`
	Apply     bool          `json:"apply"`
	Cutoff    time.Time     `json:"cutoff,omitzero"`
	Scopes    []ScopeReport `json:"scopes"`
	Leftovers []ScopeReport `json:"leftovers"`
}

// Test hook: called after a scope is renamed away and before it is
// removed (prune_test.go kills the process there).
var pruneAfterRename func(pruning string)

// Prune finds the pr-<N>, branch-<h> and commit-<sha> scopes under root that o selects
// and, with o.Apply, removes them: it first removes what a killed Prune
// left (.pruning-* directories) and the run-lifetime cache directories of
// runs that are gone (run-<16 hex>, see SweepRuns), then, per selected scope, takes every
// <name>.lock without blocking (a held one makes the scope in-use and
// kept), renames the scope to <root>/.pruning-<scope>-<8 hex> while
// holding them, and removes that. The default and local scopes are never
// candidates; symlinks are never followed. Errors are *Error.
func Prune(root string, o PruneOptions) (PruneReport, error) {
	rep := PruneReport{Root: root, Apply: o.Apply, Scopes: []ScopeReport{}, Leftovers: []ScopeReport{}}
	if o.OlderThan < 0 || o.OlderThan == 0 && len(o.Scopes) == 0 {
		return rep, &Error{Reason: ReasonUse, Msg: "prune needs an age, scope names, or both"}
	}
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) && len(o.Scopes) == 0 && filepath.IsAbs(root) {
		return rep, nil // no root yet: nothing was ever cached
	}
	if err := checkPruneRoot(root); err != nil {
		return rep, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if o.OlderThan > 0 {
		rep.Cutoff = now().Add(-o.OlderThan).UTC()
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultPruneMaxEntries
	}
	named, err := checkNamed(root, o.Scopes)
	if err != nil {
		return rep, err
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return rep, &Error{Reason: ReasonRoot, Msg: err.Error(), Err: err}
	}
	for _, e := range ents {
		if isLeftover(e.Name()) {
			rep.Leftovers = append(rep.Leftovers, pruneLeftover(root, e.Name(), o))
		}
	}
	// Run-lifetime cache directories whose harness is gone (ADR 0032).
	if runs, err := SweepRuns(root, !o.Apply); err == nil {
		rep.Leftovers = append(rep.Leftovers, runs...)
	}
	for _, e := range ents {
		n := e.Name()
		if !prunableScope(n) || (len(named) > 0 && !named[n]) {
			continue
		}
		rep.Scopes = append(rep.Scopes, pruneScope(root, n, rep.Cutoff, o))
	}
	return rep, nil
}

// checkPruneRoot refuses a root that is relative, a symlink, or not a
// directory.
func checkPruneRoot(root string) error {
	if !filepath.IsAbs(root) {
		return &Error{Reason: ReasonRoot, Msg: fmt.Sprintf("cache root %q is not absolute", root)}
	}
	fi, err := os.Lstat(root)
	switch {
	case err != nil:
		return &Error{Reason: ReasonRoot, Msg: err.Error(), Err: err}
	case fi.Mode()&fs.ModeSymlink != 0:
		return &Error{Reason: ReasonSymlink, Msg: fmt.Sprintf("cache root %s is a symlink: name the real directory", root)}
	case !fi.IsDir():
		return &Error{Reason: ReasonRoot, Msg: fmt.Sprintf("cache root %s is not a directory", root)}
	}
	return nil
}

// checkNamed validates explicitly named scopes: each must be a pr-<N>,
// branch-<16 hex> or commit-<sha> scope that exists under root.
func checkNamed(root string, scopes []string) (map[string]bool, error) {
	named := map[string]bool{}
	for _, s := range scopes {
		switch {
		case s == ScopeDefault || s == ScopeLocal:
			return nil, &Error{Scope: s, Reason: ReasonScope, Msg: "the " + s + " scope is never pruned (only pr-<N>, branch-<16 hex> and commit-<sha> scopes are)"}
		case !prunableScope(s):
			return nil, &Error{Scope: s, Reason: ReasonScope, Msg: fmt.Sprintf("%q is not a prunable scope name (want pr-<N>, branch-<16 hex> or commit-<sha>)", s)}
		}
		if _, err := os.Lstat(filepath.Join(root, s)); errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Scope: s, Reason: ReasonScope, Msg: "no such scope under " + root, Err: err}
		} else if err != nil {
			return nil, ioErr("", s, err)
		}
		named[s] = true
	}
	return named, nil
}

// prunableScope reports whether s names a pull request, branch or commit
// scope, in the exact shape PullRequest, Branch and Commit produce.
func prunableScope(s string) bool {
	switch {
	case strings.HasPrefix(s, "pr-"):
		n := s[len("pr-"):]
		if n == "" || len(n) > 10 || n[0] == '0' {
			return false
		}
		v, err := strconv.Atoi(n)
		return err == nil && v > 0 && strconv.Itoa(v) == n
	case strings.HasPrefix(s, "branch-"):
		return lowerHex(s[len("branch-"):], 16)
	case strings.HasPrefix(s, "commit-"):
		return hexSHA(s[len("commit-"):])
	}
	return false
}

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// isLeftover reports whether n is .pruning-<scope>-<8 hex>.
func isLeftover(n string) bool {
	rest, ok := strings.CutPrefix(n, pruningPrefix)
	if !ok || len(rest) < 10 || rest[len(rest)-9] != '-' {
		return false
	}
	return lowerHex(rest[len(rest)-8:], 8) && prunableScope(rest[:len(rest)-9])
}

// pruneLeftover removes (with Apply) a directory a killed Prune renamed.
func pruneLeftover(root, n string, o PruneOptions) ScopeReport {
	p := filepath.Join(root, n)
	r := ScopeReport{Name: n, Action: ActionWouldRemove}
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		r.Action, r.Reason = ActionSkipped, "not a directory"
		return r
	}
	r.Bytes, r.BytesTruncated = treeBytes(p, o.MaxEntries)
	if !o.Apply {
		return r
	}
	// A run that got a lock in it during the killed prune still has it.
	names, err := lockNames(p)
	if err != nil {
		r.Action, r.Reason = ActionSkipped, err.Error()
		return r
	}
	locks, act, reason := lockScope(p, names)
	defer closeAll(locks)
	if reason != "" {
		r.Action, r.Reason = act, reason
		return r
	}
	if err := os.RemoveAll(p); err != nil {
		r.Action, r.Reason = ActionSkipped, "remove: "+err.Error()
		return r
	}
	r.Action = ActionRemoved
	return r
}

// pruneScope decides and (with Apply) removes one candidate scope.
func pruneScope(root, n string, cutoff time.Time, o PruneOptions) ScopeReport {
	p := filepath.Join(root, n)
	r := ScopeReport{Name: n}
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		r.Action, r.Reason = ActionSkipped, err.Error()
		return r
	case fi.Mode()&fs.ModeSymlink != 0:
		r.Action, r.Reason = ActionSkipped, "symlink (never followed)"
		return r
	case !fi.IsDir():
		r.Action, r.Reason = ActionSkipped, "not a directory"
		return r
	}
	ents, act, err := scopeActivity(p, fi)
	r.Activity = act.UTC()
	if err != nil {
		r.Action, r.Reason = ActionSkipped, err.Error()
		return r
	}
	if !cutoff.IsZero() && !act.Before(cutoff) {
		r.Action, r.Reason = ActionSkipped, "active since the cutoff"
		return r
	}
	r.Bytes, r.BytesTruncated = treeBytes(p, o.MaxEntries)
	locks, lockAct, reason := lockScope(p, ents)
	defer closeAll(locks)
	switch {
	case reason != "":
		r.Action, r.Reason = lockAct, reason
		return r
	case !o.Apply:
		r.Action = ActionWouldRemove
		return r
	}
	if err := removeScope(root, n, fi, locks); err != nil {
		r.Action, r.Reason = ActionSkipped, err.Error()
		if errors.Is(err, errRaced) {
			r.Action = ActionInUse
		}
		return r
	}
	r.Action = ActionRemoved
	return r
}

// scopeActivity lists a scope directory, opened without following a
// symlink, and returns its entries and its newest mtime (the directory's
// own and each direct entry's, by Lstat: no tree walk).
func scopeActivity(p string, fi fs.FileInfo) ([]string, time.Time, error) {
	newest := fi.ModTime()
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, newest, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(now, fi) {
		return nil, newest, errors.New("changed while being read")
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, newest, fmt.Errorf("read: %w", err)
	}
	slices.Sort(names)
	for _, n := range names {
		if e, err := os.Lstat(filepath.Join(p, n)); err == nil && e.ModTime().After(newest) {
			newest = e.ModTime()
		}
	}
	return names, newest, nil
}

// treeBytes sums the sizes of the regular files under p, without following
// symlinks, stopping after max entries (then the sum is a lower bound).
func treeBytes(p string, max int) (int64, bool) {
	var sum int64
	n := 0
	truncated := false
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts count nothing
		}
		if n++; n > max {
			truncated = true
			return fs.SkipAll
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				sum += info.Size()
			}
		}
		return nil
	})
	return sum, truncated
}

// lockScope takes every <name>.lock of the scope exclusively without
// blocking. A held lock (a run has the cache mounted) or a lock that
// appeared while they were taken makes the scope in-use, a lock that
// cannot be taken (not a regular file, no flock on this system) skipped:
// then it returns the action and why, and releases them all.
func lockScope(p string, ents []string) ([]*os.File, Action, string) {
	var locks []*os.File
	for _, n := range ents {
		if !isLockName(n) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(p, n), os.O_RDWR|noFollow, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			closeAll(locks)
			return nil, ActionSkipped, "lock " + n + ": " + err.Error()
		}
		locks = append(locks, f)
		busy, err := tryLock(f, true)
		switch {
		case err != nil:
			closeAll(locks)
			return nil, ActionSkipped, "lock " + n + ": " + err.Error()
		case busy:
			closeAll(locks)
			return nil, ActionInUse, "cache " + strings.TrimSuffix(n, ".lock") + " is mounted by a run"
		}
	}
	if again, err := lockNames(p); err != nil || !slices.Equal(again, lockNamesOf(ents)) {
		closeAll(locks)
		return nil, ActionInUse, "a run started using the scope"
	}
	return locks, "", ""
}

func isLockName(n string) bool {
	base, ok := strings.CutSuffix(n, ".lock")
	return ok && validName(base)
}

func lockNamesOf(ents []string) []string {
	var out []string
	for _, n := range ents {
		if isLockName(n) {
			out = append(out, n)
		}
	}
	return out
}

func lockNames(p string) ([]string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return lockNamesOf(names), err
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// removeScope renames the scope (still the directory fi, its locks held)
// to an unreachable name, releases the locks, and removes it.
func removeScope(root, n string, fi fs.FileInfo, locks []*os.File) error {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	p := filepath.Join(root, n)
	if now, err := os.Lstat(p); err != nil || !os.SameFile(now, fi) {
		return errors.New("changed while being pruned")
	}
	dst := filepath.Join(root, pruningPrefix+n+"-"+hex.EncodeToString(b[:]))
	if err := os.Rename(p, dst); err != nil {
		return fmt.Errorf("rename: %w", err)
	}
	if pruneAfterRename != nil {
		pruneAfterRename(dst)
	}
	if raced(dst, locks) {
		closeAll(locks)
		if err := os.Rename(dst, p); err != nil {
			return fmt.Errorf("%w; left as %s: %w", errRaced, filepath.Base(dst), err)
		}
		return fmt.Errorf("%w; put back", errRaced)
	}
	closeAll(locks)
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("renamed to %s, not removed (the next prune removes it): %w", filepath.Base(dst), err)
	}
	return nil
}

// errRaced: a run took a lock of the scope the prune had not seen, between
// the prune's check and its rename.
var errRaced = errors.New("a run started using the scope during the prune")

// raced reports whether the renamed scope dir holds a lock file other than
// the held ones that cannot be taken: a run created and locked it before
// the rename.
func raced(dir string, held []*os.File) bool {
	names, err := lockNames(dir)
	if err != nil {
		return true
	}
	for _, n := range names {
		if slices.ContainsFunc(held, func(f *os.File) bool { return filepath.Base(f.Name()) == n }) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR|noFollow, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return true
		}
		busy, err := tryLock(f, true)
		f.Close()
		if err != nil || busy {
			return true
		}
	}
	return false
}
