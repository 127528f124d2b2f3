package run

import (
	"errors"
	"fmt"
	"strings"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// cacheLease is a check's hold on its caches; nil for a check without.
type cacheLease struct{ l *cache.Lease }

// acquireCaches prepares the check's declared caches in the run's scope
// (waiting while another check writes one of them). A check without caches
// gets nil and no error.
func (s *scheduler) acquireCaches(c contract.Check) (*cacheLease, error) {
	if len(c.Caches) == 0 {
		return nil, nil
	}
	if s.opts.Caches == nil {
		return nil, errors.New("caches: this harness has no cache store configured")
	}
	uses := make([]cache.Use, 0, len(c.Caches))
	for _, u := range c.Caches {
		decl, ok := s.r.Contract.Cache(u.Name)
		if !ok {
			return nil, fmt.Errorf("caches: %q is not declared", u.Name)
		}
		uses = append(uses, cache.Use{Name: u.Name, Mount: decl.Mount, ReadOnly: u.ReadOnly, Run: decl.Run()})
	}
	acquire := s.opts.Caches.Acquire
	if s.runDir != nil {
		acquire = s.runDir.Acquire
	} else if s.runDirErr != nil && usesRunCache(s.r.Contract, c) {
		return nil, s.runDirErr
	}
	l, err := acquire(s.ctx, s.r.ID, c.ID, uses)
	if err != nil {
		return nil, err
	}
	return &cacheLease{l}, nil
}

// usesRunCache reports whether c mounts a run-lifetime cache.
func usesRunCache(r *contract.Resolved, c contract.Check) bool {
	for _, u := range c.Caches {
		if decl, ok := r.Cache(u.Name); ok && decl.Run() {
			return true
		}
	}
	return false
}

// openRunDir opens the directory of the run-lifetime caches (ADR 0032)
// that s's checks use, when one of them does: one per scheduler (a run, or
// a shard of one), so no other run, nor another shard, ever mounts it. It
// returns the function that removes it once every check is done. A
// directory that cannot be opened fails each check that needs it.
func (s *scheduler) openRunDir() (closeDir func()) {
	need := false
	for _, c := range s.checks {
		need = need || usesRunCache(s.r.Contract, c)
	}
	if !need || s.opts.Caches == nil {
		return func() {}
	}
	d, err := s.opts.Caches.OpenRun()
	if err != nil {
		s.runDirErr = fmt.Errorf("caches: run-lifetime caches: %w", err)
		return func() {}
	}
	s.runDir = d
	// A directory Close cannot remove (files the sandbox user wrote, on a
	// harness that is not root) is left to the next run's or prune's
	// sweep: the checks' results do not depend on it.
	return func() { _ = d.Close() }
}

func (l *cacheLease) mounts() []runtime.Cache {
	if l == nil {
		return nil
	}
	return l.l.Mounts()
}

func (l *cacheLease) release() error {
	if l == nil {
		return nil
	}
	return l.l.Release()
}

// startedData is a check's check.started: its id and its caches.
func startedData(c contract.Check, l *cacheLease) replay.CheckStartedData {
	return replay.CheckStartedData{Check: c.ID, Caches: l.mounts()}
}

// releaseCaches ends the lease after the check: a read-only cache that
// changed under the check (or any release failure) makes the outcome an
// error, since the result depended on a state nobody attested.
func releaseCaches(res *runtime.Result, l *cacheLease) {
	if err := l.release(); err != nil {
		detail := err.Error()
		if res.Detail != "" {
			detail += "; " + res.Detail
		}
		res.Outcome, res.Detail = runtime.Error, detail
	}
}

// offlineNote explains a failed check that writes a cache without the
// network: a fetch phase (go mod download into a cache) needs network:
// host, and without it fails for a reason its output may not name.
func offlineNote(c contract.Check, res *runtime.Result) {
	if res.Outcome != runtime.Failed || res.Detail != "" || c.Network != "none" {
		return
	}
	for _, u := range c.Caches {
		if !u.ReadOnly {
			res.Detail = "the check ran with network: none (no network at all); a check that fetches into cache " + u.Name + " needs network: host"
			return
		}
	}
}

// cacheNote is the progress line's account of the caches a check mounts.
func cacheNote(l *cacheLease) string {
	var parts []string
	for _, m := range l.mounts() {
		parts = append(parts, fmt.Sprintf("%s:%s@%s", m.Name, m.Mode, m.Scope))
	}
	if len(parts) == 0 {
		return ""
	}
	return "caches " + strings.Join(parts, ",")
}
