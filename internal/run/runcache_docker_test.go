package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// hostOnly is the developer's own node_modules/host-only: 2 MiB, twice the
// workspace_size of the fixtures' checks, so a copy that carried it in
// would end the check with workspace-limit.
var hostOnly = strings.Repeat("d", 2<<20)

// runCacheFixture is a repository whose .gitignore lists node_modules and
// whose work tree holds the developer's own node_modules/host-only.
func runCacheFixture(t *testing.T, src string) *fixture {
	t.Helper()
	repo := gitRepo(t, map[string]string{"README.md": "hi\n"})
	write(t, filepath.Join(repo, ".gitignore"), ".proofgate/runs/\nnode_modules/\n")
	git(t, repo, "commit", "-qam", "ignore node_modules")
	write(t, filepath.Join(repo, "node_modules", "host-only"), hostOnly)
	c, err := contract.Parse("contract.yaml", []byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{repo: repo, state: filepath.Join(repo, ".proofgate"), c: c}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runDirs lists the run-lifetime cache directories (and owner locks)
// under a cache root.
func runDirs(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "run-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func outcomes(r *Run) map[string]replay.CheckReport {
	got := map[string]replay.CheckReport{}
	for _, c := range r.Report().Checks {
		got[c.ID] = c
	}
	return got
}

// TestRunCacheCarriesInstall: an install check writes
// /workspace/node_modules (a run-lifetime cache) and the checks that
// depend on it read it offline without installing again; they never see
// the developer's own node_modules (the copy leaves it out — 2 MiB in a
// 1 MiB workspace would be a workspace-limit — and the profile says so); a read-only user's write fails (EROFS) and a later writable
// use may write; check.started records lifetime, the run's scope, the
// digest and the provenance (empty for the install, recorded by it for
// the readers); the checkout never gets the install, and the run's cache
// directory is gone after the run.
func TestRunCacheCarriesInstall(t *testing.T) {
	d, ref := dockerOrSkip(t)
	src := runCacheContract(ref, `
  - {id: install, caches: [node-modules], run: [/bin/helper, write, /workspace/node_modules/x, "5"]}
  - {id: use, depends_on: [install], caches: [{name: node-modules, readonly: true}], run: [/bin/helper, cat, /workspace/node_modules/x]}
  - {id: host-copy, depends_on: [install], caches: [{name: node-modules, readonly: true}], run: [/bin/helper, cat, /workspace/node_modules/host-only]}
  - {id: poison, depends_on: [install], caches: [{name: node-modules, readonly: true}], run: [/bin/helper, write, /workspace/node_modules/.cache, "1"]}
  - {id: later-writer, depends_on: [use], caches: [node-modules], run: [/bin/helper, write, /workspace/node_modules/.cache, "1"]}
`)
	f := runCacheFixture(t, src)
	store := openCache(t, t.TempDir(), f)
	r := f.plan(t)
	defer r.Close()
	if err := execDocker(r, f, d, store, 3); err != nil {
		t.Fatal(err)
	}
	got := outcomes(r)
	want := map[string]runtime.Outcome{"install": runtime.Passed, "use": runtime.Passed, "host-copy": runtime.Failed, "poison": runtime.Failed, "later-writer": runtime.Passed}
	for id, o := range want {
		if got[id].Outcome != o {
			t.Errorf("%s: %s (%s), want %s", id, got[id].Outcome, got[id].Detail, o)
		}
	}
	if out := stdoutOf(r, got["use"]); out != "abcde" {
		t.Errorf("use read %q", out)
	}
	if out := stdoutOf(r, got["poison"]); !strings.Contains(out, "read-only file system") {
		t.Errorf("poison output %q", out)
	}
	if out := stdoutOf(r, got["host-copy"]); !strings.Contains(out, "no such file") {
		t.Errorf("host-copy output %q (the developer's node_modules reached the check)", out)
	}
	started := startedCaches(t, r)
	inst, use := started["install"][0], started["use"][0]
	if inst.Lifetime != "run" || !strings.HasPrefix(inst.Scope, "run-") || inst.RunScope != "local" || inst.Provenance != "empty" || inst.Entries != 0 {
		t.Errorf("install started %+v", inst)
	}
	if use.Lifetime != "run" || use.Scope != inst.Scope || use.Mode != "ro" || use.Provenance != "recorded" ||
		use.WrittenBy != r.ID+"/install" || use.Entries != 1 || use.Bytes != 5 || !strings.HasPrefix(use.Digest, "sha256:") || use.Digest == inst.Digest {
		t.Errorf("use started %+v (install %+v)", use, inst)
	}
	p := got["use"].Attestation.Profile
	ws, _ := p["workspace"].(map[string]any)
	if ex, _ := ws["excluded"].([]any); !containsAny(ex, "node_modules") {
		t.Errorf("workspace profile %v does not name node_modules as excluded", ws)
	}
	if cs, _ := p["caches"].([]any); len(cs) != 1 || cs[0].(map[string]any)["lifetime"] != "run" || cs[0].(map[string]any)["digest"] != use.Digest {
		t.Errorf("profile caches %v", p["caches"])
	}
	if _, err := os.Lstat(filepath.Join(f.repo, "node_modules", "x")); !os.IsNotExist(err) {
		t.Errorf("the install reached the checkout: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(f.repo, "node_modules", "host-only")); err != nil || string(b) != hostOnly {
		t.Errorf("the developer's node_modules changed: %d bytes %v", len(b), err)
	}
	if left := runDirs(t, store.Root()); len(left) != 0 {
		t.Errorf("run cache left after the run: %v", left)
	}
}

// runCacheContract is a contract of the helper image ref with a
// run-lifetime node-modules cache under /workspace and the given checks
// (YAML list items).
func runCacheContract(ref, checks string) string {
	return fmt.Sprintf(`version: 1
name: t
defaults: {image: %s, timeout: 60s, workspace: copy, workspace_size: 1MiB, resources: {memory: 64MiB, pids: 32}}
caches:
  node-modules: {mount: /workspace/node_modules, lifetime: run}
checks:%s
approval: {required: 0}
`, ref, checks)
}

// openCache opens the cache store at root for the fixture's repository.
func openCache(t *testing.T, root string, f *fixture) *cache.Store {
	t.Helper()
	store, err := cache.Open(root, cache.Local(), f.repo)
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// execDocker executes the planned run r with the Docker runtime d.
func execDocker(r *Run, f *fixture, d runtime.Runtime, store *cache.Store, jobs int) error {
	return r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: jobs, Caches: store,
		Runtimes: map[string]runtime.Runtime{"docker": d}})
}

// stdoutOf is a check's stdout ("" when it has none: skipped).
func stdoutOf(r *Run, c replay.CheckReport) string {
	if c.Stdout == nil {
		return ""
	}
	out, _ := r.readBlobTail(c.Stdout.Digest, 1<<10)
	return string(out)
}

func containsAny(xs []any, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestRunCachePlantedSymlink: an install that leaves a symlink out of the
// run cache (absolute, or ../..) is an error (the release walk refuses
// it), its dependents are skipped, and nothing of it outlives the run.
func TestRunCachePlantedSymlink(t *testing.T) {
	d, ref := dockerOrSkip(t)
	for name, target := range map[string]string{"absolute": "/etc", "dotdot": "../../.."} {
		t.Run(name, func(t *testing.T) {
			src := runCacheContract(ref, fmt.Sprintf(`
  - {id: install, caches: [node-modules], run: [/bin/helper, symlink, %q, /workspace/node_modules/evil]}
  - {id: use, depends_on: [install], caches: [{name: node-modules, readonly: true}], run: [/bin/helper, cat, /workspace/node_modules/evil/passwd]}
`, target))
			f := runCacheFixture(t, src)
			store := openCache(t, t.TempDir(), f)
			r := f.plan(t)
			defer r.Close()
			if err := execDocker(r, f, d, store, 2); err != nil {
				t.Fatal(err)
			}
			got := outcomes(r)
			if got["install"].Outcome != runtime.Error || !strings.Contains(got["install"].Detail, "symlink") {
				t.Errorf("install %s (%s), want error naming the symlink", got["install"].Outcome, got["install"].Detail)
			}
			if got["use"].Outcome != runtime.Skipped {
				t.Errorf("use %s (%s), want skipped", got["use"].Outcome, got["use"].Detail)
			}
			if left := runDirs(t, store.Root()); len(left) != 0 {
				t.Errorf("run cache left after the run: %v", left)
			}
		})
	}
}

// TestRunCacheConcurrentRuns: two runs of one contract at once, on one
// cache root, never see each other's node_modules: each install adds a
// uniquely named file, and each run's reader, which starts after both
// installs, counts exactly one.
func TestRunCacheConcurrentRuns(t *testing.T) {
	d, ref := dockerOrSkip(t)
	src := runCacheContract(ref, `
  - {id: install, caches: [node-modules], run: [/bin/helper, uniq, /workspace/node_modules]}
  - {id: hold, depends_on: [install], workspace: none, run: [/bin/helper, sleep, "3"]}
  - {id: count, depends_on: [hold], caches: [{name: node-modules, readonly: true}], run: [/bin/helper, count, /workspace/node_modules]}
`)
	root := t.TempDir()
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i := range 2 {
		f := runCacheFixture(t, src)
		store := openCache(t, root, f)
		r := f.plan(t)
		defer r.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := execDocker(r, f, d, store, 2); err != nil {
				t.Error(err)
				return
			}
			got := outcomes(r)
			results[i] = fmt.Sprintf("%s %s %s", got["install"].Outcome, got["count"].Outcome, strings.TrimSpace(stdoutOf(r, got["count"])))
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res != "passed passed files=1 bytes=1" {
			t.Errorf("run %d: %q, want each run to see only its own install", i, res)
		}
	}
	if left := runDirs(t, root); len(left) != 0 {
		t.Errorf("run caches left: %v", left)
	}
}
