package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// withCaches runs argv with the lease's caches mounted, then releases it.
func withCaches(t *testing.T, r *Runtime, ref string, s *cache.Store, uses []cache.Use, argv ...string) (*ran, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := s.Acquire(ctx, "run-cache", t.Name(), uses)
	if err != nil {
		t.Fatal(err)
	}
	spec := helperSpec(ref, argv...)
	spec.RunID = uniqueRun(t)
	spec.Sandbox.Caches = l.Mounts()
	res := check(t, r, spec, 1<<16)
	assertGone(t, r, spec.RunID)
	return res, l.Release()
}

func store(t *testing.T, root string, sc cache.Scope) *cache.Store {
	t.Helper()
	s, err := cache.Open(root, sc, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	useRW = []cache.Use{{Name: "mods", Mount: "/cache/mods"}}
	useRO = []cache.Use{{Name: "mods", Mount: "/cache/mods", ReadOnly: true}}
)

// TestCacheScopesInTheSandbox: through real containers, a default-branch
// run writes the default scope; a pull request's read-only mount of it
// refuses writes (EROFS, outcome failed); its writable mount is its own
// pr-N copy, whose writes never reach the default scope, and a later
// default-branch run never sees them. The profile attests each mount.
func TestCacheScopesInTheSandbox(t *testing.T) {
	r, ref := sandbox(t)
	root := t.TempDir()
	def, pr := store(t, root, cache.Default()), store(t, root, cache.PullRequest(42))

	res, err := withCaches(t, r, ref, def, useRW, "write", "/cache/mods/base.txt", "4")
	if err != nil {
		t.Fatal(err)
	}
	assertOutcome(t, res, runtime.Passed)
	caches, _ := res.Attestation.Profile["caches"].([]any)
	if len(caches) != 1 {
		t.Fatalf("profile caches %v", res.Attestation.Profile["caches"])
	}
	c := caches[0].(map[string]any)
	if c["name"] != "mods" || c["mount"] != "/cache/mods" || c["mode"] != "rw" || c["scope"] != "default" || c["provenance"] != "empty" || !strings.HasPrefix(c["digest"].(string), "sha256:") {
		t.Fatalf("attested %v", c)
	}
	if _, ok := c["source"]; ok {
		t.Fatalf("the host path is attested: %v", c)
	}

	// A PR run writing the base branch's cache: mounted read-only, refused.
	res, err = withCaches(t, r, ref, pr, useRO, "write", "/cache/mods/base.txt", "9")
	if err != nil {
		t.Fatal(err)
	}
	assertOutcome(t, res, runtime.Failed)
	if !strings.Contains(res.stdout.String(), "read-only file system") {
		t.Fatalf("stdout %q", res.stdout.String())
	}
	c = res.Attestation.Profile["caches"].([]any)[0].(map[string]any)
	if c["mode"] != "ro" || c["scope"] != "default" || c["run_scope"] != "pr-42" || c["provenance"] != "recorded" {
		t.Fatalf("PR read-only mount attested %v", c)
	}
	// Its writable use is its own copy.
	res, err = withCaches(t, r, ref, pr, useRW, "write", "/cache/mods/base.txt", "9")
	if err != nil {
		t.Fatal(err)
	}
	assertOutcome(t, res, runtime.Passed)
	if b, _ := os.ReadFile(filepath.Join(def.Root(), "default", "mods", "base.txt")); string(b) != "abcd" {
		t.Fatalf("default scope holds %q after the PR's write", b)
	}
	if b, _ := os.ReadFile(filepath.Join(def.Root(), "pr-42", "mods", "base.txt")); string(b) != "abcdefghi" {
		t.Fatalf("pr-42 scope holds %q", b)
	}
	// A PR's cache is never mounted into a default-branch run.
	res, err = withCaches(t, r, ref, def, useRO, "cat", "/cache/mods/base.txt")
	if err != nil {
		t.Fatal(err)
	}
	assertOutcome(t, res, runtime.Passed)
	if res.stdout.String() != "abcd" {
		t.Fatalf("default run read %q", res.stdout.String())
	}
}

// TestCacheSourceSymlinkRefused: a cache directory that is a symlink out
// of the cache root is refused right before the mount: outcome error, no
// container created.
func TestCacheSourceSymlinkRefused(t *testing.T) {
	r, ref := sandbox(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "mods")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(t.TempDir(), "real")
	if err := os.MkdirAll(filepath.Join(outside, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "d"), inner); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{link, filepath.Join(inner, ".")} {
		spec := helperSpec(ref, "cat", "/cache/mods/secret")
		spec.RunID = uniqueRun(t)
		spec.Sandbox.Caches = []runtime.Cache{{Name: "mods", Mount: "/cache/mods", Mode: "ro", Scope: "local", RunScope: "local", Source: src}}
		res := check(t, r, spec, 1<<16)
		assertOutcome(t, res, runtime.Error)
		if !strings.Contains(res.Detail, "symlink") {
			t.Fatalf("detail %q", res.Detail)
		}
		assertGone(t, r, spec.RunID)
	}
	// And the store refuses such a directory before anything runs.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "local"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "local", "mods")); err != nil {
		t.Fatal(err)
	}
	_, err := store(t, root, cache.Local()).Acquire(context.Background(), "r", "c", useRO)
	var ce *cache.Error
	if !errors.As(err, &ce) || ce.Reason != cache.ReasonSymlink {
		t.Fatalf("store: %v", err)
	}
}

// TestCacheChangedBetweenDigestAndMount: the tree digest is taken at
// Acquire, before the mount; a change made after it (before the container
// starts, or while it runs) is caught when the lease is released.
func TestCacheChangedBetweenDigestAndMount(t *testing.T) {
	r, ref := sandbox(t)
	s := store(t, t.TempDir(), cache.Local())
	if _, err := withCaches(t, r, ref, s, useRW, "write", "/cache/mods/f", "4"); err != nil {
		t.Fatal(err)
	}
	l, err := s.Acquire(context.Background(), "run", "c", useRO)
	if err != nil {
		t.Fatal(err)
	}
	m := l.Mounts()[0]
	// The change, between the attestation's digest and the mount.
	if err := os.WriteFile(filepath.Join(m.Source, "f"), []byte("evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := helperSpec(ref, "cat", "/cache/mods/f")
	spec.Sandbox.Caches = l.Mounts()
	res := check(t, r, spec, 1<<16)
	assertOutcome(t, res, runtime.Passed)
	if res.Attestation.Profile["caches"].([]any)[0].(map[string]any)["digest"] != m.Digest {
		t.Fatal("the profile does not carry the digest taken before the mount")
	}
	var ce *cache.Error
	if err := l.Release(); !errors.As(err, &ce) || ce.Reason != cache.ReasonChanged || !strings.Contains(err.Error(), m.Digest) {
		t.Fatalf("release after the change: %v", err)
	}
	// The next mount says the tree is not what the last recorded write left.
	l, err = s.Acquire(context.Background(), "run", "c", useRO)
	if err != nil {
		t.Fatal(err)
	}
	if p := l.Mounts()[0].Provenance; p != "unrecorded" {
		t.Fatalf("provenance %s", p)
	}
	l.Release()
}

// TestCacheTargetRefused: a cache target the sandbox owns is refused by the
// runtime whatever the kernel sent.
func TestCacheTargetRefused(t *testing.T) {
	r, ref := sandbox(t)
	dir := t.TempDir()
	for _, target := range []string{"/workspace", "/workspace/x", "/tmp", Home + "/go", "/etc/hosts", "/proc/x", "relative", "/a/../b"} {
		spec := helperSpec(ref, "true")
		spec.Sandbox.Caches = []runtime.Cache{{Name: "c", Mount: target, Mode: "rw", Source: dir}}
		res := check(t, r, spec, 1<<10)
		assertOutcome(t, res, runtime.Error)
		if !strings.Contains(res.Detail, "caches[0].mount") {
			t.Fatalf("%s: %q", target, res.Detail)
		}
	}
}

// TestRunCacheTargetRules: only a run-lifetime cache may lie under
// /workspace, only strictly, only in a copy-mode workspace, and not
// through a directory of the host workspace that is a symlink (which
// would move the mount point away from the path the copy leaves out).
func TestRunCacheTargetRules(t *testing.T) {
	r, ref := sandbox(t)
	dir := t.TempDir()
	ws := t.TempDir()
	if err := os.Symlink("real", filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mount, lifetime, workspace, msg string
	}{
		{"/workspace/node_modules", "", "copy", "only a run-lifetime cache"},
		{"/workspace/node_modules", "run", "readonly", "needs workspace copy"},
		{"/workspace/node_modules", "run", "none", "needs workspace copy"},
		{"/workspace", "run", "copy", "overlaps /workspace"},
		{"/", "run", "copy", "not a clean absolute path"},
		{"/workspace/linked/node_modules", "run", "copy", "linked is not a directory"},
	} {
		spec := helperSpec(ref, "true")
		spec.Workspace, spec.Sandbox.Workspace = ws, tc.workspace
		spec.Sandbox.Caches = []runtime.Cache{{Name: "c", Mount: tc.mount, Mode: "rw", Source: dir, Lifetime: tc.lifetime}}
		res := check(t, r, spec, 1<<10)
		assertOutcome(t, res, runtime.Error)
		if !strings.Contains(res.Detail, "caches[0].mount") || !strings.Contains(res.Detail, tc.msg) {
			t.Errorf("%s (%s, %s): %q, want %q", tc.mount, tc.lifetime, tc.workspace, res.Detail, tc.msg)
		}
	}
}
