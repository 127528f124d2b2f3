package run

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// The test binary doubles as a harness that a test kills: with
// PG_RUN_HARNESS=repo|state|cache-root|contract-file it plans and executes
// that run, and never returns on its own before the kill.
func TestMain(m *testing.M) {
	if spec := os.Getenv("PG_RUN_HARNESS"); spec != "" {
		os.Exit(harness(strings.Split(spec, "|")))
	}
	os.Exit(m.Run())
}

func harness(a []string) int {
	ctx := context.Background()
	fail := func(err error) int { fmt.Println("error", err); return 1 }
	c, err := contract.Load(a[3], "")
	if err != nil {
		return fail(err)
	}
	d, err := docker.New(ctx)
	if err != nil {
		return fail(err)
	}
	store, err := cache.Open(a[2], cache.Local(), a[0])
	if err != nil {
		return fail(err)
	}
	r, err := Plan(ctx, PlanOptions{RepoDir: a[0], StateDir: a[1], Contract: c, Origin: "test"})
	if err != nil {
		return fail(err)
	}
	fmt.Println("planned", r.ID)
	err = r.Exec(ctx, ExecOptions{RepoDir: a[0], StateDir: a[1], Jobs: 1, Caches: store, Runtimes: map[string]runtime.Runtime{"docker": d}})
	return fail(fmt.Errorf("exec returned: %v", err))
}

// TestRunCacheHarnessKilled: a harness killed with SIGKILL in the middle
// of a check leaves its run directory (the install's node_modules in it);
// the next run of the contract on that cache root removes it before its
// own checks, and its own checks see an empty run cache.
func TestRunCacheHarnessKilled(t *testing.T) {
	d, ref := dockerOrSkip(t)
	src := fmt.Sprintf(`version: 1
name: t
defaults: {image: %s, timeout: 120s, workspace: copy, resources: {memory: 64MiB, pids: 32}}
caches:
  node-modules: {mount: /workspace/node_modules, lifetime: run}
checks:
  - {id: install, caches: [node-modules], run: [/bin/helper, uniq, /workspace/node_modules]}
  - {id: hold, depends_on: [install], caches: [{name: node-modules, readonly: true}], run: [/bin/helper, sleep, "100"]}
approval: {required: 0}
`, ref)
	f := runCacheFixture(t, src)
	cfile := filepath.Join(t.TempDir(), "contract.yaml")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PG_RUN_HARNESS="+strings.Join([]string{f.repo, f.state, root, cfile}, "|"))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if _, err := d.GC(context.Background()); err != nil { // the killed harness's container
			t.Log(err)
		}
	})
	// Wait for the hold check to be running: the install's file in a run
	// directory and hold's container up (its check.started is logged).
	var left []string
	deadline := time.Now().Add(2 * time.Minute)
	for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		left, _ = filepath.Glob(filepath.Join(root, "run-*", "node-modules", "*-*"))
		started, _ := filepath.Glob(filepath.Join(f.state, "runs", "*", EventsFile))
		if len(left) == 1 && len(started) == 1 && strings.Contains(readFile(started[0]), `"check":"hold"`) {
			break
		}
	}
	if len(left) != 1 {
		t.Fatalf("the harness never got to its hold check (run caches %v)", left)
	}
	time.Sleep(time.Second) // inside the check
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("the killed harness left nothing to sweep: %v", err)
	}
	// The next run (a fresh work tree of the same contract, same cache root).
	g := runCacheFixture(t, strings.Replace(src, `[/bin/helper, sleep, "100"]`, `[/bin/helper, count, /workspace/node_modules]`, 1))
	store, err := cache.Open(root, cache.Local(), g.repo)
	if err != nil {
		t.Fatal(err)
	}
	r := g.plan(t)
	defer r.Close()
	if err := r.Exec(context.Background(), ExecOptions{RepoDir: g.repo, StateDir: g.state, Jobs: 1, Caches: store,
		Runtimes: map[string]runtime.Runtime{"docker": d}}); err != nil {
		t.Fatal(err)
	}
	got := outcomes(r)
	if out := stdoutOf(r, got["hold"]); got["hold"].Outcome != runtime.Passed || strings.TrimSpace(out) != "files=1 bytes=1" {
		t.Errorf("next run's reader: %s %q, want its own install only", got["hold"].Outcome, out)
	}
	if runs := runDirs(t, root); len(runs) != 0 {
		t.Errorf("left after the next run: %v (the killed run's should be swept, the next run's removed)", runs)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
