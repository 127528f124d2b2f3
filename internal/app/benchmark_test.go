package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/bench"
	"github.com/proofgate/proofgate/kernel/exit"
)

const benchManifest = `version: 1
suites:
  - id: api
    title: API
    tasks:
      - id: health
        title: Health endpoint returns 503 when the cache is down
        criteria:
          - {id: returns-503, text: GET /health answers 503}
`

// A report covers every run and compares the manifest's tasks; a baseline
// is recorded once, a second refused; the default manifest is found in
// the working directory, and none is a usage error when one is required.
func TestBenchmark(t *testing.T) {
	state, r := executedWith(t, contractYAML+"benchmark: {suite: api, task: health}\n")
	r.Close()
	rep, err := BenchmarkReport(state, "")
	if err != nil || len(rep.Runs) != 1 || rep.Runs[0].Task != "health" || len(rep.Tasks) != 0 {
		t.Fatalf("report %+v, %v", rep, err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if p, err := ManifestPath("", true); p != "" || class(err) != exit.Usage {
		t.Fatalf("no manifest: %q, %v", p, err)
	}
	os.MkdirAll(".proofgate", 0o755)
	os.WriteFile(filepath.Join(".proofgate", "benchmark.yaml"), []byte(benchManifest), 0o644)
	m, err := ManifestPath("", true)
	if err != nil || m != manifestYAML {
		t.Fatalf("manifest %q, %v", m, err)
	}
	o := bench.BaselineOptions{Task: "health", Status: "not-run", Now: time.Now()}
	if b, err := RecordBaseline(m, o); err != nil || b.Status != "not-run" {
		t.Fatalf("baseline %+v, %v", b, err)
	}
	if _, err := RecordBaseline(m, o); class(err) != exit.Refused {
		t.Fatalf("a second baseline: %v", err)
	}
	rep, err = BenchmarkReport(state, m)
	if err != nil || len(rep.Tasks) != 1 || rep.Tasks[0].Comparable || rep.ManifestDigest == "" {
		t.Fatalf("report with a manifest %+v, %v", rep, err)
	}
}
