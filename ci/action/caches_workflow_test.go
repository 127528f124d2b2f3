package action

import (
	"strings"
	"testing"
)

type cacheStep struct {
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	With map[string]string `yaml:"with"`
	Run  string            `yaml:"run"`
}

// cachesWorkflow is examples/workflows/proofgate-caches.yml's one job.
func cachesWorkflow(t *testing.T) []cacheStep {
	t.Helper()
	var w struct {
		Jobs map[string]struct {
			Steps []cacheStep `yaml:"steps"`
		} `yaml:"jobs"`
	}
	readYAML(t, "examples/workflows/proofgate-caches.yml", &w)
	if len(w.Jobs) != 1 {
		t.Fatalf("%d jobs", len(w.Jobs))
	}
	for _, j := range w.Jobs {
		return j.Steps
	}
	return nil
}

const (
	cacheRootExpr = "${{ runner.temp }}/proofgate-cache/"
	prScopeExpr   = "pr-${{ github.event.pull_request.number }}"
	defaultBranch = "github.event_name == 'push' && github.ref_name == github.event.repository.default_branch"
)

// TestCachesWorkflowComposition: the actions/cache composition restores
// before the action and saves after it, into the directories the action's
// cache store uses ($RUNNER_TEMP/proofgate-cache/<scope>), saves the
// default scope only from a push to the default branch and a pull
// request's scope only from that pull request, and keys every entry by the
// contract and go.sum.
func TestCachesWorkflowComposition(t *testing.T) {
	steps := cachesWorkflow(t)
	action := -1
	for i, s := range steps {
		if s.Uses == "proofgate/proofgate@v1" {
			action = i
		}
	}
	if action < 0 {
		t.Fatal("no proofgate step")
	}
	var key string
	restored, saved := map[string]bool{}, map[string]bool{}
	for i, s := range steps {
		if s.ID == "key" {
			key = s.Run
		}
		kind, _, ok := strings.Cut(strings.TrimPrefix(s.Uses, "actions/cache/"), "@")
		if !ok || !strings.HasPrefix(s.Uses, "actions/cache/") {
			continue
		}
		scope, ok := strings.CutPrefix(s.With["path"], cacheRootExpr)
		if !ok || (scope != "default" && scope != prScopeExpr) {
			t.Errorf("step %d: path %q is no scope directory of the cache root", i, s.With["path"])
		}
		if !strings.HasPrefix(s.With["key"], "${{ steps.key.outputs.prefix }}-"+scope+"-") {
			t.Errorf("step %d: key %q does not start with the contract/go.sum prefix", i, s.With["key"])
		}
		switch kind {
		case "restore":
			if i > action {
				t.Errorf("step %d restores %s after the action", i, scope)
			}
			restored[scope] = true
		case "save":
			if i < action {
				t.Errorf("step %d saves %s before the action", i, scope)
			}
			saved[scope] = true
			checkSaveCondition(t, i, scope, s.If)
		default:
			t.Errorf("step %d: %s: use actions/cache/restore and actions/cache/save", i, s.Uses)
		}
	}
	if !strings.Contains(key, "hashFiles('.proofgate/contract.yaml', 'go.sum')") {
		t.Errorf("cache key step %q does not hash the contract and go.sum", key)
	}
	for _, scope := range []string{"default", prScopeExpr} {
		if !restored[scope] || !saved[scope] {
			t.Errorf("scope %s: restored %v saved %v", scope, restored[scope], saved[scope])
		}
	}
}

// checkSaveCondition: a save of the default scope runs only on a push to
// the default branch (a pull request's run never writes default/, and its
// save would be scoped to the PR by GitHub anyway); a save of a PR scope
// only in a pull request's run.
func checkSaveCondition(t *testing.T, i int, scope, cond string) {
	t.Helper()
	switch scope {
	case "default":
		if !strings.Contains(cond, defaultBranch) {
			t.Errorf("step %d saves default/ under %q, not only on pushes to the default branch", i, cond)
		}
	case prScopeExpr:
		if !strings.Contains(cond, "github.event.pull_request.number") {
			t.Errorf("step %d saves the PR scope under %q", i, cond)
		}
	}
}
