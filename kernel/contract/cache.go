package contract

import (
	"bytes"
	"encoding/json"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/internal/strictjson"
)

// Bounds on caches.
const (
	// MaxCaches bounds the caches a contract declares and a check uses.
	MaxCaches = 16
)

// Cache lifetimes (the contract's caches.<name>.lifetime).
const (
	// LifetimePersistent is the default: the directory is kept between
	// runs, per scope (internal/cache). The resolved form omits it, so
	// contracts written before lifetimes keep their hash.
	LifetimePersistent = "persistent"
	// LifetimeRun starts empty in every run and is removed when the run's
	// checks are done; the only lifetime whose mount may lie under
	// /workspace (ADR 0032).
	LifetimeRun = "run"
)

// Cache is a declared cache: a directory the harness keeps between runs
// (per scope, see internal/cache), or for one run only (Lifetime "run"), and
// mounts at Mount in the checks that use it.
type Cache struct {
	Name  string `json:"name"`
	Mount string `json:"mount"`
	// Lifetime is "" (persistent) or LifetimeRun.
	Lifetime string `json:"lifetime,omitempty"`
}

// Run reports whether the cache lives for one run only.
func (c Cache) Run() bool { return c.Lifetime == LifetimeRun }

// CacheUse is a check's use of a declared cache: writable unless ReadOnly
// (and then only where the run's scope lets it write, see internal/cache).
type CacheUse struct {
	Name     string `json:"name"`
	ReadOnly bool   `json:"readonly,omitempty"`
}

// cacheName is the pattern of a cache name (as the schema's cacheName).
var cacheName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

type rawCache struct {
	Mount    string `json:"mount"`
	Lifetime string `json:"lifetime"`
}

type rawCacheUse struct {
	Name     string `json:"name"`
	ReadOnly bool   `json:"readonly"`
}

// reservedTargets are container paths the Docker sandbox already mounts; a
// cache may neither cover them nor lie beneath them (/tmp, $HOME and the
// workspace) nor equal them (/etc/hosts).
var reservedTargets = []string{"/workspace", "/tmp", "/home/sandbox", "/etc/hosts"}

// Cache returns the declared cache with the given name.
func (r *Resolved) Cache(name string) (Cache, bool) {
	for _, c := range r.Caches {
		if c.Name == name {
			return c, true
		}
	}
	return Cache{}, false
}

// resolveCaches checks the declared caches and every check's use of them:
// mounts are absolute, clean and overlap nothing the sandbox mounts, nor
// each other, nor the check's own mounts; a check names only declared
// caches, each once, and only with runtime docker; every declared cache is
// used by some check.
func (p *parser) resolveCaches(r *Resolved, raw *rawContract) error {
	names := slices.Sorted(maps.Keys(raw.Caches))
	for _, name := range names {
		at := fieldPath("caches").key(name)
		if !cacheName.MatchString(name) {
			return p.errf(at, "cache name %q does not match %s", name, cacheName.String())
		}
		lifetime, err := p.cacheLifetime(raw.Caches[name].Lifetime, at.key("lifetime"))
		if err != nil {
			return err
		}
		m, err := p.cacheMount(raw.Caches[name].Mount, lifetime == LifetimeRun, at.key("mount"))
		if err != nil {
			return err
		}
		for _, o := range r.Caches {
			if overlaps(m, o.Mount) {
				return p.errf(at.key("mount"), "%s overlaps cache %s's mount %s", m, o.Name, o.Mount)
			}
		}
		r.Caches = append(r.Caches, Cache{Name: name, Mount: m, Lifetime: lifetime})
	}
	used := map[string]bool{}
	for i := range r.Checks {
		if err := p.checkCaches(r, &r.Checks[i], raw.Checks[i].Caches, fieldPath("checks").idx(i).key("caches"), used); err != nil {
			return err
		}
	}
	for _, name := range names {
		if !used[name] {
			return p.errf(fieldPath("caches").key(name), "cache %q is named by no check: remove it or add it to a check's caches", name)
		}
	}
	return p.checkRunReaders(r)
}

// checkRunReaders refuses a read-only use of a run-lifetime cache by a
// check that depends, directly or not, on no check writing it: the cache
// starts empty in every run, so such a check would read an empty tree, or
// race the install.
func (p *parser) checkRunReaders(r *Resolved) error {
	index := map[string]int{}
	for i, c := range r.Checks {
		index[c.ID] = i
	}
	for i, c := range r.Checks {
		for j, u := range c.Caches {
			if decl, _ := r.Cache(u.Name); !u.ReadOnly || !decl.Run() || dependsOnWriter(r.Checks, index, i, u.Name, map[int]bool{}) {
				continue
			}
			return p.errf(fieldPath("checks").idx(i).key("caches").idx(j), "reads run-lifetime cache %s, which starts empty in every run, but depends on no check that writes it: add the check that fills it (the install) to depends_on", u.Name)
		}
	}
	return nil
}

// dependsOnWriter reports whether check i depends, directly or through
// others, on a check with a writable use of cache name.
func dependsOnWriter(checks []Check, index map[string]int, i int, name string, seen map[int]bool) bool {
	for _, d := range checks[i].DependsOn {
		k, ok := index[d]
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		for _, u := range checks[k].Caches {
			if u.Name == name && !u.ReadOnly {
				return true
			}
		}
		if dependsOnWriter(checks, index, k, name, seen) {
			return true
		}
	}
	return false
}

// cacheLifetime validates a cache's lifetime and returns its resolved form:
// "" for persistent (absent or written out), LifetimeRun for run.
func (p *parser) cacheLifetime(l string, at fieldPath) (string, error) {
	switch l {
	case "", LifetimePersistent:
		return "", nil
	case LifetimeRun:
		return LifetimeRun, nil
	}
	return "", p.errf(at, "%q is not a lifetime (want %s or %s)", l, LifetimePersistent, LifetimeRun)
}

// cacheMount validates a cache's mount path in the container. A
// run-lifetime cache (run) may lie under /workspace, strictly: it carries
// an install's output (node_modules) to later checks of the same run.
func (p *parser) cacheMount(m string, run bool, at fieldPath) (string, error) {
	switch {
	case strings.IndexByte(m, 0) >= 0:
		return "", p.errf(at, "contains a NUL byte")
	case !path.IsAbs(m):
		return "", p.errf(at, "%q must be an absolute path in the container", m)
	case path.Clean(m) != m:
		return "", p.errf(at, "%q is not clean (want %q)", m, path.Clean(m))
	case m == "/":
		return "", p.errf(at, "cannot mount a cache over /")
	}
	for _, f := range forbiddenTargets {
		if overlaps(m, f) {
			return "", p.errf(at, "%s overlaps %s", m, f)
		}
	}
	for _, f := range reservedTargets {
		switch {
		case run && f == workspaceTarget && strings.HasPrefix(m, f+"/"):
		case f == workspaceTarget && strings.HasPrefix(m, f+"/"):
			return "", p.errf(at, "%s lies under /workspace: only a cache with lifetime: run may (a persistent cache there would carry one run's tree into the next)", m)
		case overlaps(m, f):
			return "", p.errf(at, "%s overlaps %s, which the sandbox mounts", m, f)
		}
	}
	return m, nil
}

// workspaceTarget is where the sandbox mounts the workspace.
const workspaceTarget = "/workspace"

// inWorkspace reports whether a cache mount lies under /workspace.
func inWorkspace(m string) bool { return strings.HasPrefix(m, workspaceTarget+"/") }

// checkWorkspaceCaches refuses a check that mounts a cache under
// /workspace without a copy-mode workspace: a read-only bind of the
// checkout has no room for the mount point, and nothing may write the
// checkout. at names the field to blame (the check's caches item, or a
// profile's workspace).
func (p *parser) checkWorkspaceCaches(r *Resolved, c Check, at func(j int) fieldPath) error {
	if c.Workspace == "copy" {
		return nil
	}
	for j, u := range c.Caches {
		if decl, ok := r.Cache(u.Name); ok && inWorkspace(decl.Mount) {
			return p.errf(at(j), "cache %s mounts at %s, under /workspace, which needs workspace: copy (the check's workspace is %s: the checkout must never be written)", u.Name, decl.Mount, c.Workspace)
		}
	}
	return nil
}

// checkCaches resolves one check's cache list into c.Caches.
func (p *parser) checkCaches(r *Resolved, c *Check, raws []json.RawMessage, at fieldPath, used map[string]bool) error {
	if raws == nil {
		return nil
	}
	if len(raws) > MaxCaches {
		return p.errf(at, "%d caches, at most %d", len(raws), MaxCaches)
	}
	if c.Runtime != "docker" {
		return p.errf(at, "caches need runtime docker: the %s runtime runs the check on the host, where a cache could not be mounted read-only or scoped", c.Runtime)
	}
	seen := map[string]int{}
	for j, item := range raws {
		u, err := p.cacheUse(item, at.idx(j))
		if err != nil {
			return err
		}
		decl, ok := r.Cache(u.Name)
		if !ok {
			return p.errf(at.idx(j), "unknown cache %q (declare it under caches)", u.Name)
		}
		if k, dup := seen[u.Name]; dup {
			return p.errf(at.idx(j), "cache %q is already used at %s", u.Name, at.idx(k))
		}
		seen[u.Name] = j
		for _, m := range c.Mounts {
			if overlaps(decl.Mount, m.Target) {
				return p.errf(at.idx(j), "cache %s at %s overlaps the check's mount %s", u.Name, decl.Mount, m.Target)
			}
		}
		used[u.Name] = true
		c.Caches = append(c.Caches, u)
	}
	return p.checkWorkspaceCaches(r, *c, func(j int) fieldPath { return at.idx(j) })
}

// cacheUse decodes one item of a check's caches: a name, or {name, readonly}.
func (p *parser) cacheUse(item json.RawMessage, at fieldPath) (CacheUse, error) {
	item = bytes.TrimSpace(item)
	if len(item) > 0 && item[0] == '"' {
		var name string
		if err := strictjson.Decode(item, &name); err != nil {
			return CacheUse{}, p.errf(at, "not a cache name: %v", err)
		}
		return CacheUse{Name: name}, nil
	}
	var u rawCacheUse
	if err := strictjson.Decode(item, &u); err != nil {
		return CacheUse{}, p.errf(at, "not a cache name or {name, readonly}: %v", err)
	}
	return CacheUse(u), nil
}

// overlaps reports whether one of two clean absolute paths is the other or
// lies beneath it.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}
