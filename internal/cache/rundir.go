package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// runPrefix starts the name of a run-lifetime cache directory under the
// root: run-<16 hex>, beside its owner lock run-<16 hex>.lock. No scope
// name (default, local, pr-<N>, branch-<h>) starts so.
const runPrefix = "run-"

// openRunTries bounds OpenRun's attempts at a fresh name.
const openRunTries = 8

// RunDir is one execution's directory of run-lifetime caches (contract
// lifetime: run, ADR 0032): <root>/run-<16 hex>/, one <name>/ (with its
// <name>.lock and <name>.state) per cache, as in a scope. It starts empty,
// is seen by no other run (the name is random and never reused), and is
// removed by Close; while it is open its owner lock <root>/run-<16
// hex>.lock is held exclusively, so SweepRuns (the next OpenRun, cache
// prune) removes it only once its harness is gone, however it ended.
type RunDir struct {
	store *Store // a copy of the Store, its runScope set
	owner *os.File
}

// OpenRun creates the run directory of one execution of checks (a run, or
// a shard of one), after removing what dead harnesses left (SweepRuns,
// best effort). The owner lock is created, locked and checked to be the
// file at its path before the directory exists, so a sweeper never sees
// a live run's directory without a held lock.
func (s *Store) OpenRun() (*RunDir, error) {
	_, _ = SweepRuns(s.root, false)
	for range openRunTries {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, ioErr("", runPrefix, err)
		}
		name := runPrefix + hex.EncodeToString(b[:])
		f, err := lockNew(filepath.Join(s.root, name+".lock"))
		if err != nil {
			return nil, ioErr("", name, err)
		}
		if f == nil {
			continue
		}
		if err := os.Mkdir(filepath.Join(s.root, name), 0o700); err != nil {
			f.Close()
			return nil, ioErr("", name, err)
		}
		rs := *s
		rs.runScope = name
		return &RunDir{store: &rs, owner: f}, nil
	}
	return nil, &Error{Reason: ReasonIO, Msg: fmt.Sprintf("no fresh run directory name after %d tries", openRunTries)}
}

// lockNew creates path exclusively and locks it; nil (no error) when the
// name is taken or a sweeper got the lock first.
func lockNew(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	busy, err := tryLock(f, true)
	held, err1 := f.Stat()
	now, err2 := os.Lstat(path)
	if err != nil || busy || err1 != nil || err2 != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Name is the run directory's name, run-<16 hex>: the Scope its caches
// are attested with.
func (d *RunDir) Name() string { return d.store.runScope }

// Dir is the run directory's path on the host.
func (d *RunDir) Dir() string { return filepath.Join(d.store.root, d.store.runScope) }

// Acquire is Store.Acquire for one check of this run: uses with Run set
// mount this run's own directories (each starts empty), the others their
// scope's, with the same locks, walks and refusals (a symlink that leaves
// the directory, a FIFO) as every cache.
func (d *RunDir) Acquire(ctx context.Context, run, check string, uses []Use) (*Lease, error) {
	return d.store.Acquire(ctx, run, check, uses)
}

// Close removes the run directory and then its owner lock; call it once
// every lease is released. A directory it cannot remove (files the sandbox
// user wrote, on a harness that is not root) stays with its lock file,
// unlocked, for the next SweepRuns; the error says so.
func (d *RunDir) Close() error {
	defer d.owner.Close()
	dir := d.Dir()
	if err := os.RemoveAll(dir); err != nil {
		return &Error{Scope: d.Name(), Reason: ReasonIO, Msg: fmt.Sprintf("removing the run's caches %s: %v (the next run or 'proofgate clean caches --apply' retries; as another user than the sandbox's, remove it as root)", dir, err), Err: err}
	}
	if err := os.Remove(dir + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ioErr("", d.Name(), err)
	}
	return nil
}

// isRunName reports whether n is run-<16 hex>.
func isRunName(n string) bool {
	rest, ok := strings.CutPrefix(n, runPrefix)
	return ok && lowerHex(rest, 16)
}

// SweepRuns removes (or, with dryRun, only reports) the run directories
// under root whose harness is gone: the owner lock exists and is free, or
// is missing (a sweep that died between the directory and the lock). A
// held lock is a live run: in-use, kept. Symlinks are never followed.
func SweepRuns(root string, dryRun bool) ([]ScopeReport, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, &Error{Reason: ReasonRoot, Msg: err.Error(), Err: err}
	}
	seen := map[string]bool{}
	var out []ScopeReport
	for _, e := range ents {
		n := strings.TrimSuffix(e.Name(), ".lock")
		if !isRunName(n) || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, sweepRun(root, n, dryRun))
	}
	return out, nil
}

// sweepRun decides and (unless dryRun) removes one run directory.
func sweepRun(root, n string, dryRun bool) ScopeReport {
	dir := filepath.Join(root, n)
	r := ScopeReport{Name: n, Action: ActionWouldRemove}
	if fi, err := os.Lstat(dir); err == nil {
		r.Activity = fi.ModTime().UTC()
		if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
			r.Action, r.Reason = ActionSkipped, "not a directory (never followed)"
			return r
		}
		r.Bytes, r.BytesTruncated = treeBytes(dir, DefaultPruneMaxEntries)
	}
	f, err := os.OpenFile(dir+".lock", os.O_RDWR|noFollow, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		r.Action, r.Reason = ActionSkipped, "owner lock: "+err.Error()
		return r
	default:
		defer f.Close()
		busy, err := tryLock(f, true)
		if err != nil || busy {
			r.Action, r.Reason = ActionInUse, "its run is still going (owner lock held)"
			if err != nil {
				r.Action, r.Reason = ActionSkipped, "owner lock: "+err.Error()
			}
			return r
		}
	}
	if dryRun {
		return r
	}
	if err := os.RemoveAll(dir); err != nil {
		r.Action, r.Reason = ActionSkipped, "remove: "+err.Error()
		return r
	}
	if f != nil {
		_ = os.Remove(dir + ".lock")
	}
	r.Action = ActionRemoved
	return r
}
