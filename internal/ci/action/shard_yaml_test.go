package action

import (
	"slices"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/shard"
)

type shardWorkflowYAML struct {
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		If       string `yaml:"if"`
		Needs    any    `yaml:"needs"`
		Strategy struct {
			FailFast *bool `yaml:"fail-fast"`
			Matrix   struct {
				Shard []string `yaml:"shard"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// The sharded example: a plan job (mode plan), a matrix of shard jobs
// (needs: plan) whose entries parse as I/N with one N covering 1..N, a
// merge job (mode merge, needs: the matrix, running when a shard's checks
// failed but not when cancelled), and a review job without shards; every
// input passed is declared by action.yml, and the permissions let the
// jobs list the run's artifacts.
func TestShardsWorkflow(t *testing.T) {
	const file = "examples/workflows/shards.yml"
	var a actionYAML
	readYAML(t, "action.yml", &a)
	var w shardWorkflowYAML
	readYAML(t, file, &w)
	if got := keys(w.On); !slices.Equal(got, []string{"pull_request", "pull_request_review"}) {
		t.Errorf("on %v", got)
	}
	if w.Permissions["actions"] != "read" || w.Permissions["contents"] != "read" {
		t.Errorf("permissions %v: the jobs list and download the run's artifacts (actions: read)", w.Permissions)
	}
	mode := func(job string) string {
		for _, s := range w.Jobs[job].Steps {
			if strings.HasPrefix(s.Uses, "OWNER/proofgate@") {
				for k := range s.With {
					if _, ok := a.Inputs[k]; !ok {
						t.Errorf("job %s passes undeclared input %q", job, k)
					}
				}
				if s.With["signing-key"] == "" {
					t.Errorf("job %s signs nothing: no signing-key", job)
				}
				m := s.With["mode"]
				if s.With["shard"] != "" {
					m += "+shard=" + s.With["shard"]
				}
				return m
			}
		}
		t.Errorf("job %s does not use the action", job)
		return ""
	}
	if got := keys(w.Jobs); !slices.Equal(got, []string{"merge", "plan", "review", "shard"}) {
		t.Fatalf("jobs %v", got)
	}
	if m := mode("plan"); m != ModePlan {
		t.Errorf("plan job mode %q", m)
	}
	if m := mode("shard"); m != "+shard=${{ matrix.shard }}" {
		t.Errorf("shard job: %q, want shard: ${{ matrix.shard }} in mode run", m)
	}
	if m := mode("merge"); m != ModeMerge {
		t.Errorf("merge job mode %q", m)
	}
	if m := mode("review"); m != "" {
		t.Errorf("review job mode %q, want the default run (the fast path)", m)
	}
	sj := w.Jobs["shard"]
	if sj.Needs != "plan" || sj.Strategy.FailFast == nil || *sj.Strategy.FailFast {
		t.Errorf("shard job: needs %v fail-fast %v", sj.Needs, sj.Strategy.FailFast)
	}
	seen := map[int]bool{}
	n := 0
	for _, v := range sj.Strategy.Matrix.Shard {
		sp, err := shard.ParseSpec(v)
		if err != nil {
			t.Fatalf("matrix entry %q: %v", v, err)
		}
		if n != 0 && sp.Count != n || seen[sp.Index] {
			t.Errorf("matrix entry %q: counts or indexes disagree", v)
		}
		n, seen[sp.Index] = sp.Count, true
	}
	if n < 2 || len(seen) != n {
		t.Errorf("matrix %v does not cover 1..N", sj.Strategy.Matrix.Shard)
	}
	mj := w.Jobs["merge"]
	if mj.Needs != "shard" || !strings.Contains(mj.If, "!cancelled()") {
		t.Errorf("merge job: needs %v if %q", mj.Needs, mj.If)
	}
	for job, ev := range map[string]string{"plan": "'pull_request'", "merge": "'pull_request'", "review": "'pull_request_review'"} {
		if !strings.Contains(w.Jobs[job].If, "github.event_name == "+ev) {
			t.Errorf("job %s runs on if %q, want only on %s", job, w.Jobs[job].If, ev)
		}
	}
}
