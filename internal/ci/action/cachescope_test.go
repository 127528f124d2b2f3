package action

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/contract"
)

// scopeCase is one run of TestCacheScopeBoundCommit: the event GitHub
// delivers (its name, payload, GITHUB_REF and GITHUB_SHA) and the commit
// the workflow checked out before the action.
type scopeCase struct {
	name       string
	event      string
	payload    func(fx *fixture) (string, error)
	ref, sha   string // GITHUB_REF; GITHUB_SHA (a commit name, resolved below)
	head       string // what the workspace has checked out: base, head, merge
	wantPrefix string // the scope written
}

// TestCacheScopeBoundCommit: the scope a run writes follows the commit it
// binds (its planned, recorded HEAD) and the event, never GITHUB_REF
// alone. In the fixture main is at base and the pull request's head is a
// commit on topic only: a run bound to it never writes default, whatever
// ref the event names; a push to main that binds main's head does.
func TestCacheScopeBoundCommit(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	c, err := contract.Parse("c.yaml", []byte("version: 1\nname: t\ndefaults: {image: x}\ncaches: {m: {mount: /m}}\nchecks: [{id: a, run: ['true'], caches: [m]}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	pr := func(fx *fixture) (string, error) {
		return fx.gh.WritePullRequestEvent(fx.wf, owner, repo, prNum, "synchronize")
	}
	comment := func(fx *fixture) (string, error) {
		return fx.gh.WriteIssueCommentEvent(fx.wf, owner, repo, prNum, "/proofgate run")
	}
	wrun := func(fx *fixture) (string, error) { return fx.gh.WriteWorkflowRunEvent(fx.wf, owner, repo, prNum) }
	push := func(ref, after string) func(fx *fixture) (string, error) {
		return func(fx *fixture) (string, error) {
			return fx.gh.WritePushEvent(fx.wf, owner, repo, ref, fx.commit(after))
		}
	}
	dispatch := func(fx *fixture) (string, error) {
		return fx.gh.WriteDispatchEvent(fx.wf, owner, repo, "refs/heads/main")
	}
	// A push payload whose repository names another default branch than
	// the ref GITHUB_REF names.
	pushTrunk := func(fx *fixture) (string, error) {
		p := filepath.Join(fx.tmp, "push-trunk.json")
		writeFile(t, p, `{"ref":"refs/heads/main","after":"`+fx.base+`","repository":{"full_name":"acme/widget","default_branch":"trunk"}}`)
		return p, nil
	}
	main := "refs/heads/" + githubtest.DefaultBranch
	for _, tc := range []scopeCase{
		// Hostile: a PR's content under an event whose ref is the default branch.
		{"issue_comment, PR head checked out", "issue_comment", comment, main, "base", "head", "commit-"},
		{"workflow_run, PR head checked out", "workflow_run", wrun, main, "base", "head", "commit-"},
		{"pull_request_target, PR head checked out", "pull_request_target", pr, main, "base", "head", "pr-7"},
		{"workflow_dispatch on main, PR head checked out", "workflow_dispatch", dispatch, main, "base", "head", "commit-"},
		{"push to main, another commit checked out", "push", push(main, "base"), main, "base", "merge", "commit-"},
		{"push to topic", "push", push("refs/heads/topic", "head"), "refs/heads/topic", "head", "head", "branch-"},
		{"push payload of topic, GITHUB_REF main", "push", push("refs/heads/topic", "head"), main, "head", "head", "commit-"},
		{"push of main's head, GITHUB_SHA the PR head", "push", push(main, "base"), main, "head", "head", "commit-"},
		{"push to main, default branch trunk", "push", pushTrunk, main, "base", "base", "branch-"},
		{"pull_request, the test merge", "pull_request", pr, "refs/pull/7/merge", "merge", "merge", "pr-7"},
		// Legitimate: the default branch's own head.
		{"push to main binding its head", "push", push(main, "base"), main, "base", "base", "default"},
		{"workflow_dispatch on main binding its head", "workflow_dispatch", dispatch, main, "base", "base", "default"},
		{"issue_comment binding main's head", "issue_comment", comment, main, "base", "base", "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := fx.scopeOf(t, c, tc)
			if !strings.HasPrefix(sc.Name, tc.wantPrefix) || (tc.wantPrefix != "default" && sc.Name == cache.ScopeDefault) {
				t.Fatalf("scope %+v, want %s…", sc, tc.wantPrefix)
			}
			if tc.wantPrefix == "commit-" && sc.Name != "commit-"+fx.commit(tc.head) {
				t.Fatalf("scope %s, want the bound commit's", sc.Name)
			}
		})
	}
}

// commit resolves a fixture commit name: base (main), head (the pull
// request's head on topic), merge (the test merge).
func (fx *fixture) commit(name string) string {
	switch name {
	case "base":
		return fx.base
	case "head":
		return fx.head
	case "merge":
		return fx.merge
	}
	fx.t.Fatalf("no commit %q", name)
	return ""
}

// scopeOf checks out tc.head, loads the event as the action does, plans a
// run (which records HEAD) and opens the cache store the run would use.
func (fx *fixture) scopeOf(t *testing.T, c *contract.Resolved, tc scopeCase) cache.Scope {
	t.Helper()
	git(t, fx.ws, "checkout", "-q", "--detach", fx.commit(tc.head))
	p, err := tc.payload(fx)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GITHUB_EVENT_NAME": tc.event, "GITHUB_EVENT_PATH": p, "GITHUB_REF": tc.ref,
		"GITHUB_SHA": fx.commit(tc.sha), "RUNNER_TEMP": t.TempDir(), "GITHUB_REPOSITORY": owner + "/" + repo}
	getenv := func(k string) string { return env[k] }
	ev, err := event.Load(getenv)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	j := &job{o: &Options{Getenv: getenv}, ev: ev, c: c, ws: fx.ws, stateDir: t.TempDir(), repo: owner + "/" + repo,
		s: &jobsummary.Run{}, res: &Result{}}
	j.f = newWorkflow(getenv, &out)
	j.res.Outputs = j.f.outputs
	if err := j.plan(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.closeRun()
	if got := j.r.Report().Source.Commit; got != fx.commit(tc.head) {
		t.Fatalf("the run binds %s, want %s", got, tc.head)
	}
	s, err := j.cacheStore()
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return s.Scope()
}
