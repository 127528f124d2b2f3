package bench

import (
	"math"

	"github.com/proofgate/proofgate/kernel/replay"
)

// Comparability reasons: why a task is not comparable with its baseline.
const (
	NotBaselineMissing  = "baseline-missing"
	NotBaselineNotRun   = "baseline-not-run"
	NotBaselineEvidence = "baseline-evidence-missing"
	NotHarnessNotRun    = "harness-not-run"
	NotHarnessComplete  = "harness-not-complete"
)

// Directions of a resource: lower is better for every resource.
const (
	Improved    = "improved"
	Regressed   = "regressed"
	Unchanged   = "unchanged"
	Unavailable = "unavailable"
)

// TaskReport is one task of the manifest, compared with its baseline.
type TaskReport struct {
	Suite      string     `json:"suite"`
	Task       string     `json:"task"`
	Title      string     `json:"title"`
	Comparable bool       `json:"comparable"`
	Reason     string     `json:"reason,omitempty"`
	Runs       int        `json:"runs"` // reconciled runs bound to the task
	LatestRun  string     `json:"latest_run,omitempty"`
	RunState   string     `json:"run_state,omitempty"`
	Baseline   *Baseline  `json:"baseline,omitempty"`
	Resources  []Resource `json:"resources,omitempty"`
}

// Resource is one resource of a comparable task: the baseline's and the
// run's value, and (baseline − run) / baseline.
type Resource struct {
	Name      string   `json:"name"` // duration_ms | attempts | review_ms
	Baseline  *int64   `json:"baseline"`
	Run       *int64   `json:"run"`
	Delta     *float64 `json:"delta"`
	Direction string   `json:"direction"`
}

// Compare adds each manifest task's comparability to r. A task is
// comparable only when its baseline exists and is not not-run, its
// evidence digest is recorded and its criteria cover every acceptance
// criterion, and the latest reconciled run bound to the task (by run id) is
// COMPLETE. There is no composite score: each resource is reported alone.
func Compare(r *Report, m *Manifest) {
	r.Tasks = []TaskReport{}
	known := map[[2]string]bool{}
	for _, s := range m.Suites {
		for _, t := range s.Tasks {
			r.Tasks = append(r.Tasks, compareTask(r.Runs, s, t))
			known[[2]string{s.ID, t.ID}] = true
		}
	}
	r.Unmatched = nil
	for _, run := range r.Runs {
		if run.Task != "" && !known[[2]string{run.Suite, run.Task}] {
			r.Unmatched = append(r.Unmatched, run.RunID)
		}
	}
}

func compareTask(runs []RunFacts, s Suite, t Task) TaskReport {
	tr := TaskReport{Suite: s.ID, Task: t.ID, Title: t.Title, Baseline: t.Baseline}
	var latest *RunFacts
	for i := range runs {
		if runs[i].Suite == s.ID && runs[i].Task == t.ID {
			tr.Runs++
			latest = &runs[i] // runs are sorted by id: the last is the latest
		}
	}
	if latest != nil {
		tr.LatestRun, tr.RunState = latest.RunID, latest.State
	}
	switch {
	case t.Baseline == nil:
		tr.Reason = NotBaselineMissing
	case t.Baseline.Status == StatusNotRun:
		tr.Reason = NotBaselineNotRun
	case t.Baseline.EvidenceDigest == "" || !covers(t.Baseline.Criteria, t.Criteria):
		tr.Reason = NotBaselineEvidence
	case latest == nil:
		tr.Reason = NotHarnessNotRun
	case latest.State != string(replay.Complete):
		tr.Reason = NotHarnessComplete
	default:
		tr.Comparable = true
		attempts := int64(tr.Runs)
		tr.Resources = []Resource{
			resource("duration_ms", t.Baseline.DurationMS, &latest.DurationMS),
			resource("attempts", t.Baseline.Attempts, &attempts),
			resource("review_ms", t.Baseline.ReviewMS, latest.ReviewMS),
		}
	}
	return tr
}

func covers(have []string, want []Criterion) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, c := range want {
		if !set[c.ID] {
			return false
		}
	}
	return true
}

// resource compares one resource; lower is better.
func resource(name string, base, run *int64) Resource {
	r := Resource{Name: name, Baseline: base, Run: run, Direction: Unavailable}
	if base == nil || run == nil || *base <= 0 {
		return r
	}
	d := math.Round(float64(*base-*run)/float64(*base)*1e4) / 1e4
	r.Delta = &d
	switch {
	case *run < *base:
		r.Direction = Improved
	case *run > *base:
		r.Direction = Regressed
	default:
		r.Direction = Unchanged
	}
	return r
}
