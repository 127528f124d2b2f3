package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/bench"
)

const benchContract = `version: 1
name: bench
defaults: {runtime: process, timeout: 30s}
checks:
  - {id: ok, run: ['true']}
benchmark: {suite: api, task: health}
`

const benchManifest = `version: 1
suites:
  - id: api
    title: API
    tasks:
      - id: health
        title: Health endpoint returns 503 when the cache is down
        criteria:
          - {id: returns-503, text: GET /health answers 503}
      - id: docs
        title: Document it
        criteria: [{id: written, text: the doc exists}]
`

func TestBenchmarkBaselineAndReport(t *testing.T) {
	dir := historyRepo(t, benchContract, map[string]string{".proofgate/benchmark.yaml": benchManifest})
	evidence := filepath.Join(t.TempDir(), "health.txt")
	os.WriteFile(evidence, []byte("503\n"), 0o644)

	// Hostile writes: unknown task, a criterion not in the task, bad flags.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--task", "nope", "--status", "passed", "--evidence-file", evidence}, exitRefused, "unknown-task"},
		{[]string{"--task", "health", "--status", "passed", "--criteria", "returns-503,written", "--evidence-file", evidence}, exitRefused, "unknown-criterion"},
		{[]string{"--task", "health", "--status", "passed"}, exitRefused, "evidence-unreadable"},
		{[]string{"--task", "health", "--status", "passed", "--evidence-file", evidence, "--duration", "soon"}, exitUsage, "--duration"},
		{[]string{"--status", "passed"}, exitUsage, "--task"},
	} {
		code, _, errs := hcli(append([]string{"benchmark", "baseline"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: %d %s", c.args, code, errs)
		}
	}
	if b, _ := os.ReadFile(".proofgate/benchmark.yaml"); string(b) != benchManifest {
		t.Fatal("a refused baseline changed the manifest")
	}
	code, out, errs := hcli("benchmark", "baseline", "--task", "health", "--status", "passed", "--criteria", "returns-503",
		"--evidence-file", evidence, "--duration", "1h", "--attempts", "3", "--actor", "alice", "--json")
	if code != 0 || !strings.Contains(out, `"evidence_digest": "sha256:`) {
		t.Fatalf("baseline: %d %s %s", code, out, errs)
	}
	if code, _, errs := hcli("benchmark", "baseline", "--task", "health", "--status", "failed", "--evidence-file", evidence); code != exitRefused || !strings.Contains(errs, "baseline-exists") {
		t.Fatalf("duplicate: %d %s", code, errs)
	}
	gitCommitAll(t, dir, "baseline")

	// No run yet: harness-not-run.
	rep := benchReport(t, 0)
	if rep.Tasks[0].Reason != bench.NotHarnessNotRun || rep.Tasks[1].Reason != bench.NotBaselineMissing {
		t.Fatalf("tasks: %+v", rep.Tasks)
	}
	// An awaiting run, then a complete one.
	if code, _, errs := hcli("run", "--quiet"); code != exitAwaiting {
		t.Fatalf("run: %d %s", code, errs)
	}
	rep = benchReport(t, 0)
	if rep.Tasks[0].Reason != bench.NotHarnessComplete {
		t.Fatalf("harness-not-complete: %+v", rep.Tasks[0])
	}
	if code, _, errs := hcli("approve", "latest", "--actor", "bob"); code != 0 {
		t.Fatalf("approve: %d %s", code, errs)
	}
	rep = benchReport(t, 0)
	tr := rep.Tasks[0]
	if !tr.Comparable || tr.Resources[0].Direction != bench.Improved || tr.Resources[1].Direction != bench.Improved || tr.Resources[2].Direction != bench.Unavailable {
		t.Fatalf("comparable: %+v", tr)
	}
	if rep.Runs[0].Approvals != 1 || rep.Runs[0].ReviewMS == nil || rep.Aggregate.CompleteRate != 1 {
		t.Fatalf("facts: %+v", rep.Runs[0])
	}

	// A tampered run among the history: refused and listed, exit 1; the
	// other runs still reported.
	if code, _, errs := hcli("run", "--quiet"); code != exitAwaiting {
		t.Fatalf("run: %d %s", code, errs)
	}
	ids, _ := os.ReadDir(filepath.Join(dir, ".proofgate", "runs"))
	victim := filepath.Join(dir, ".proofgate", "runs", ids[1].Name(), "events.ndjson")
	b, _ := os.ReadFile(victim)
	os.WriteFile(victim, []byte(strings.Replace(string(b), `"outcome":"passed"`, `"outcome":"failed"`, 1)), 0o644)
	rep = benchReport(t, exitRefused)
	if len(rep.Refused) != 1 || rep.Refused[0].RunID != ids[1].Name() || rep.Refused[0].Reason != "chain" || len(rep.Runs) != 1 {
		t.Fatalf("tampered: refused %+v runs %d", rep.Refused, len(rep.Runs))
	}
	if !rep.Tasks[0].Comparable || rep.Tasks[0].LatestRun != ids[0].Name() {
		t.Fatalf("the tampered run counted: %+v", rep.Tasks[0])
	}
	code, out, errs = hcli("benchmark", "report")
	if code != exitRefused || !strings.Contains(out, "refused: "+ids[1].Name()+": chain") || !strings.Contains(errs, "do not reconcile") {
		t.Fatalf("text report: %d %s %s", code, out, errs)
	}
}

func benchReport(t *testing.T, want int) *bench.Report {
	t.Helper()
	code, out, errs := hcli("benchmark", "report", "--json")
	var rep bench.Report
	if code != want || json.Unmarshal([]byte(out), &rep) != nil || rep.Version != 1 {
		t.Fatalf("report: %d %s %s", code, out, errs)
	}
	return &rep
}
