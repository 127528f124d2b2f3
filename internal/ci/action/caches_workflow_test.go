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
		if strings.HasPrefix(s.Uses, "OWNER/proofgate@") {
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
	checkOwnership(t, steps, action)
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

// checkOwnership: the cache root goes to root after the last restore and
// before the action, and to the runner user after the action and before
// the first save (caches_compose_test.go in cmd/proofgate shows why).
func checkOwnership(t *testing.T, steps []cacheStep, action int) {
	t.Helper()
	toRoot, toRunner := -1, -1
	lastRestore, firstSave := -1, len(steps)
	for i, s := range steps {
		switch {
		case strings.Contains(s.Run, `chown -R 0:0 "$RUNNER_TEMP/proofgate-cache"`):
			toRoot = i
		case strings.Contains(s.Run, `chown -R "$(id -u):$(id -g)" "$RUNNER_TEMP/proofgate-cache"`):
			toRunner = i
			if s.If != "always()" {
				t.Errorf("the chown before the save runs under %q, not always()", s.If)
			}
		case strings.HasPrefix(s.Uses, "actions/cache/restore@"):
			lastRestore = i
		case strings.HasPrefix(s.Uses, "actions/cache/save@") && i < firstSave:
			firstSave = i
		}
	}
	if !(lastRestore < toRoot && toRoot < action) {
		t.Errorf("chown to root at step %d, want between the last restore (%d) and the action (%d)", toRoot, lastRestore, action)
	}
	if !(action < toRunner && toRunner < firstSave) {
		t.Errorf("chown to the runner at step %d, want between the action (%d) and the first save (%d)", toRunner, action, firstSave)
	}
}
