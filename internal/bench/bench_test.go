package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

const manifestYAML = `# benchmark tasks
version: 1
suites:
  - id: api
    title: API work
    tasks:
      - id: health-503   # the endpoint
        title: Health endpoint returns 503 when the cache is down
        criteria:
          - {id: returns-503, text: GET /health answers 503}
          - {id: logs-cause, text: the log names the cache}
      - id: other
        title: Something else
        criteria: [{id: done, text: it is done}]
`

func reasonOf(t *testing.T, err error) Reason {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not a *bench.Error", err)
	}
	return e.Reason
}

func writeFile(t *testing.T, p, s string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func i64(v int64) *int64 { return &v }

func TestBaselineWriteAndHostileCases(t *testing.T) {
	dir := t.TempDir()
	m := writeFile(t, filepath.Join(dir, "benchmark.yaml"), manifestYAML)
	ev := writeFile(t, filepath.Join(dir, "evidence.txt"), "503 observed\n")

	// Unknown task, a criterion the task lacks, bad status, missing evidence.
	for want, o := range map[Reason]BaselineOptions{
		ReasonUnknownTask: {Task: "nope", Status: StatusPassed, EvidenceFile: ev},
		ReasonCriterion:   {Task: "health-503", Status: StatusPassed, Criteria: []string{"returns-503", "done"}, EvidenceFile: ev},
		ReasonBadBaseline: {Task: "health-503", Status: "great", EvidenceFile: ev},
		ReasonEvidence:    {Task: "health-503", Status: StatusPassed, EvidenceFile: filepath.Join(dir, "absent")},
	} {
		if _, err := RecordBaseline(m, o); reasonOf(t, err) != want {
			t.Errorf("%s: %v", want, err)
		}
	}
	if _, err := RecordBaseline(m, BaselineOptions{Task: "health-503", Status: StatusPassed}); reasonOf(t, err) != ReasonEvidence {
		t.Errorf("no evidence file: %v", err)
	}
	if b, _ := os.ReadFile(m); string(b) != manifestYAML {
		t.Fatal("a refused baseline changed the manifest")
	}

	b, err := RecordBaseline(m, BaselineOptions{Task: "health-503", Status: StatusPassed, Criteria: []string{"returns-503", "logs-cause"},
		EvidenceFile: ev, DurationMS: i64(60000), Attempts: i64(2), ReviewMS: i64(1000), Actor: "alice", Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if b.EvidenceDigest != "sha256:"+sha256hex("503 observed\n") {
		t.Errorf("evidence_digest %s", b.EvidenceDigest)
	}
	got, _ := os.ReadFile(m)
	if !strings.Contains(string(got), "# the endpoint") || !strings.Contains(string(got), "evidence_digest: "+b.EvidenceDigest) {
		t.Errorf("rewritten manifest lost its comments or the digest:\n%s", got)
	}
	man, _, err := Load(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, tk, _ := man.Task("health-503"); tk.Baseline == nil || *tk.Baseline.DurationMS != 60000 {
		t.Fatalf("baseline not read back: %+v", tk)
	}
	// Duplicate baseline.
	if _, err := RecordBaseline(m, BaselineOptions{Task: "health-503", Status: StatusFailed, EvidenceFile: ev}); reasonOf(t, err) != ReasonDuplicate {
		t.Errorf("duplicate: %v", err)
	}
	// not-run needs no evidence.
	if _, err := RecordBaseline(m, BaselineOptions{Task: "other", Status: StatusNotRun}); err != nil {
		t.Errorf("not-run: %v", err)
	}
	// JSON manifests too.
	jm := writeFile(t, filepath.Join(dir, "benchmark.json"), `{"version":1,"suites":[{"id":"s","title":"","tasks":[{"id":"t","title":"T","criteria":[{"id":"c","text":"x"}]}]}]}`)
	if _, err := RecordBaseline(jm, BaselineOptions{Task: "t", Status: StatusFailed, Criteria: []string{"c"}, EvidenceFile: ev}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(jm); err != nil {
		t.Fatal(err)
	}
}

// The manifest edited while a baseline is written (here: between staging
// and the rename, by a concurrent writer): refused, the edit kept, no
// temporary file left.
func TestBaselineRefusedWhenManifestEditedDuringWrite(t *testing.T) {
	dir := t.TempDir()
	m := writeFile(t, filepath.Join(dir, "benchmark.yaml"), manifestYAML)
	ev := writeFile(t, filepath.Join(dir, "e"), "x")
	edited := manifestYAML + "# edited by someone else\n"
	t.Cleanup(func() { beforeRename = nil })
	beforeRename = func() {
		// A separate process edits the file, as a concurrent editor would.
		if out, err := exec.Command("sh", "-c", `printf '%s' "$1" > "$2"`, "sh", edited, m).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	_, err := RecordBaseline(m, BaselineOptions{Task: "other", Status: StatusPassed, Criteria: []string{"done"}, EvidenceFile: ev})
	if reasonOf(t, err) != ReasonManifestChanged {
		t.Fatalf("%v", err)
	}
	if b, _ := os.ReadFile(m); string(b) != edited {
		t.Fatalf("the concurrent edit was lost:\n%s", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

func TestManifestRefused(t *testing.T) {
	for name, src := range map[string]string{
		"version":       "version: 2\nsuites: []\n",
		"unknown field": strings.Replace(manifestYAML, "title: API work", "title: API work\n    owner: bob", 1),
		"dup task":      strings.Replace(manifestYAML, "id: other", "id: health-503", 1),
		"dup key":       strings.Replace(manifestYAML, "title: API work", "title: API work\n    title: again", 1),
		"alias":         "version: 1\nsuites: &a []\nx: *a\n",
		"no criteria":   strings.Replace(manifestYAML, "criteria: [{id: done, text: it is done}]", "criteria: []", 1),
		"bad baseline":  strings.Replace(manifestYAML, "criteria: [{id: done, text: it is done}]", "criteria: [{id: done, text: d}]\n        baseline: {status: passed, criteria: [nope]}", 1),
		"float":         "version: 1.5\n",
	} {
		if _, err := Parse("b.yaml", []byte(src)); err == nil || reasonOf(t, err) != ReasonManifestInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// ---- run history ----

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

type history struct {
	repo, state string
}

func newHistory(t *testing.T) *history {
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, ".gitignore"), ".proofgate/runs/\n")
	git(t, repo, "init", "-q", ".")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	return &history{repo, filepath.Join(repo, ".proofgate")}
}

// run plans and executes a run of contract src, and approves it when
// approve is set; it returns the run id.
func (h *history) run(t *testing.T, src string, approve bool) string {
	t.Helper()
	c, err := contract.Parse("c.yaml", []byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: h.repo, StateDir: h.state, Contract: c, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Exec(context.Background(), run.ExecOptions{RepoDir: h.repo, StateDir: h.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
		t.Fatal(err)
	}
	if approve {
		if err := r.Decide(context.Background(), run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: h.repo, StateDir: h.state}}); err != nil {
			t.Fatal(err)
		}
	}
	return r.ID
}

const boundContract = `version: 1
name: b
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: ok, run: ['true']}
benchmark: {suite: api, task: health-503}
`

// A tampered run among the history is refused and listed; the others are
// reported, sorted by id, with aggregate rates; comparability follows the
// latest bound run.
func TestHistoryReportAndComparability(t *testing.T) {
	h := newHistory(t)
	failing := strings.Replace(boundContract, "['true']", "['false']", 1)
	blocked := h.run(t, failing, false)
	tampered := h.run(t, boundContract, true)
	unbound := h.run(t, strings.Replace(boundContract, "benchmark: {suite: api, task: health-503}\n", "", 1), false)

	rj := filepath.Join(h.state, "runs", tampered, "run.json")
	b, _ := os.ReadFile(rj)
	os.WriteFile(rj, []byte(strings.Replace(string(b), `"COMPLETE"`, `"BLOCKED"`, 1)), 0o644)

	rep, err := History(h.state)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Refused) != 1 || rep.Refused[0].RunID != tampered || rep.Refused[0].Reason != "projection-tampered" {
		t.Fatalf("refused: %+v", rep.Refused)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].RunID != blocked || rep.Runs[1].RunID != unbound || rep.Runs[0].Task != "health-503" || rep.Runs[1].Task != "" {
		t.Fatalf("runs: %+v", rep.Runs)
	}
	if rep.Runs[0].State != "BLOCKED" || rep.Runs[0].Outcomes["failed"] != 1 || rep.Runs[0].Evidence == 0 {
		t.Errorf("facts: %+v", rep.Runs[0])
	}
	if a := rep.Aggregate; a.Runs != 2 || a.Refused != 1 || a.BlockedRate != 0.5 || a.CheckPassRate != 0.5 {
		t.Errorf("aggregate: %+v", a)
	}

	dir := t.TempDir()
	mf := writeFile(t, filepath.Join(dir, "benchmark.yaml"), manifestYAML)
	ev := writeFile(t, filepath.Join(dir, "e"), "x")
	m, _, _ := Load(mf)
	Compare(rep, m)
	if len(rep.Unmatched) != 0 {
		t.Errorf("unmatched %v", rep.Unmatched)
	}
	other, _ := Parse("m.yaml", []byte(strings.Replace(manifestYAML, "id: api", "id: web", 1)))
	Compare(rep, other)
	if len(rep.Unmatched) != 1 || rep.Unmatched[0] != blocked {
		t.Errorf("unmatched %v", rep.Unmatched)
	}
	Compare(rep, m)
	if rep.Tasks[0].Reason != NotBaselineMissing || rep.Tasks[1].Reason != NotBaselineMissing {
		t.Fatalf("tasks: %+v", rep.Tasks)
	}
	// Evidence covering only one of two criteria.
	if _, err := RecordBaseline(mf, BaselineOptions{Task: "health-503", Status: StatusPassed, Criteria: []string{"returns-503"}, EvidenceFile: ev, DurationMS: i64(3_600_000), Attempts: i64(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := RecordBaseline(mf, BaselineOptions{Task: "other", Status: StatusNotRun}); err != nil {
		t.Fatal(err)
	}
	m, _, _ = Load(mf)
	Compare(rep, m)
	if rep.Tasks[0].Reason != NotBaselineEvidence || rep.Tasks[1].Reason != NotBaselineNotRun {
		t.Fatalf("tasks: %+v", rep.Tasks)
	}
	// Full coverage: now the harness side decides.
	os.WriteFile(mf, []byte(strings.Replace(mustRead(t, mf), "- returns-503\n", "- returns-503\n            - logs-cause\n", 1)), 0o644)
	m, _, err = Load(mf)
	if err != nil {
		t.Fatalf("%v\n%s", err, mustRead(t, mf))
	}
	Compare(rep, m)
	if rep.Tasks[0].Reason != NotHarnessComplete || rep.Tasks[0].LatestRun != blocked {
		t.Fatalf("harness-not-complete: %+v", rep.Tasks[0])
	}
	empty, _ := History(filepath.Join(t.TempDir(), "none"))
	Compare(empty, m)
	if empty.Tasks[0].Reason != NotHarnessNotRun {
		t.Fatalf("harness-not-run: %+v", empty.Tasks[0])
	}
	// A COMPLETE bound run: comparable, per-resource directions.
	complete := h.run(t, boundContract, true)
	rep, _ = History(h.state)
	Compare(rep, m)
	tr := rep.Tasks[0]
	if !tr.Comparable || tr.LatestRun != complete || tr.Runs != 2 {
		t.Fatalf("comparable: %+v", tr)
	}
	dirs := map[string]string{}
	for _, r := range tr.Resources {
		dirs[r.Name] = r.Direction
	}
	// duration: far below an hour; attempts: 2 bound runs against 1; no
	// baseline review time.
	if dirs["duration_ms"] != Improved || dirs["attempts"] != Regressed || dirs["review_ms"] != Unavailable {
		t.Errorf("directions %v", dirs)
	}
	if d := tr.Resources[1].Delta; d == nil || *d != -1 {
		t.Errorf("attempts delta %v", d)
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestResourceDirections(t *testing.T) {
	for _, c := range []struct {
		base, run *int64
		want      string
	}{{i64(10), i64(5), Improved}, {i64(10), i64(20), Regressed}, {i64(10), i64(10), Unchanged}, {nil, i64(1), Unavailable}, {i64(0), i64(1), Unavailable}, {i64(1), nil, Unavailable}} {
		if r := resource("x", c.base, c.run); r.Direction != c.want {
			t.Errorf("%v %v: %s", c.base, c.run, r.Direction)
		}
	}
	if d := resource("x", i64(10), i64(5)).Delta; *d != 0.5 {
		t.Errorf("delta %v", *d)
	}
}
