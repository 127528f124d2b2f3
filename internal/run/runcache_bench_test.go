package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// BenchmarkRunCacheCarry compares, through real containers, a run whose
// install check fills a run-lifetime cache at /workspace/node_modules and
// whose three dependent checks read it (carry), with the same run where
// each of the three checks installs again (reinstall; what a Node contract
// had to do before ADR 0032). The install is synthetic: helper tree writes
// PROOFGATE_BENCH_FILES files of PROOFGATE_BENCH_BYTES bytes in all
// (default 20000 and 200 MB, a node_modules' size); a dependent check
// counts the tree. Reported: ms per run of each variant and their ratio.
// PROOFGATE_BENCH_CACHE_PARENT puts the cache root under another
// directory (e.g. /dev/shm: a tmpfs, as the copy-mode workspace is).
//
//	go test ./internal/run/ -run '^$' -bench RunCacheCarry -benchtime 3x
func BenchmarkRunCacheCarry(b *testing.B) {
	d, ref := dockerOrSkip(b)
	files, bytes := envInt("PROOFGATE_BENCH_FILES", 20000), envInt("PROOFGATE_BENCH_BYTES", 200<<20)
	head := fmt.Sprintf(`version: 1
name: bench
defaults: {image: %s, timeout: 10m, workspace: copy, workspace_size: 1GiB, resources: {memory: 2GiB, pids: 64}}
`, ref)
	tree := fmt.Sprintf(`[/bin/helper, tree, /workspace/node_modules, "%d", "%d"]`, files, bytes)
	carry := head + `caches:
  node-modules: {mount: /workspace/node_modules, lifetime: run}
checks:
  - {id: install, caches: [node-modules], run: ` + tree + `}
`
	reinstall := head + "checks:\n"
	for i := 1; i <= 3; i++ {
		carry += fmt.Sprintf("  - {id: t%d, depends_on: [install], caches: [{name: node-modules, readonly: true}], run: [/bin/helper, count, /workspace/node_modules]}\n", i)
		reinstall += fmt.Sprintf("  - {id: t%d, run: %s}\n", i, tree)
	}
	carry += "approval: {required: 0}\n"
	reinstall += "approval: {required: 0}\n"
	var took [2]time.Duration
	for i := 0; i < b.N; i++ {
		for v, src := range []string{carry, reinstall} {
			took[v] += benchRun(b, d, src)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(took[0].Milliseconds())/n, "carry-ms/run")
	b.ReportMetric(float64(took[1].Milliseconds())/n, "reinstall-ms/run")
	b.ReportMetric(float64(took[1])/float64(took[0]), "reinstall/carry")
}

// benchRun plans and executes one run of src (one check at a time, as a
// laptop's two cores would) and returns how long Exec took.
func benchRun(b *testing.B, d runtime.Runtime, src string) time.Duration {
	f := newFixture(b, src)
	root := b.TempDir()
	if dir := os.Getenv("PROOFGATE_BENCH_CACHE_PARENT"); dir != "" {
		root, _ = os.MkdirTemp(dir, "pg-bench-")
		defer os.RemoveAll(root)
	}
	store, err := cache.Open(root, cache.Local(), f.repo)
	if err != nil {
		b.Fatal(err)
	}
	r, err := Plan(context.Background(), PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	if err := r.Exec(context.Background(), ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 1, Caches: store,
		Runtimes: map[string]runtime.Runtime{"docker": d}}); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	for _, line := range readLines(b, filepath.Join(r.Dir, EventsFile)) {
		var ev struct {
			Type string    `json:"type"`
			Time time.Time `json:"time"`
			Data struct {
				Check string `json:"check"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Data.Check != "" {
			b.Logf("+%6.1fs %s %s", ev.Time.Sub(start).Seconds(), ev.Type, ev.Data.Check)
		}
	}
	b.Logf("exec returned +%.1fs", took.Seconds())
	for _, c := range r.Report().Checks {
		if c.Outcome != runtime.Passed {
			b.Fatalf("%s: %s (%s)", c.ID, c.Outcome, c.Detail)
		}
		b.Logf("%s %s", c.ID, time.Duration(c.DurationMS)*time.Millisecond)
	}
	return took
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
