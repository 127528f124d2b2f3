package action

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// TestCacheScopeFromEvent: the adapter feeds the event's facts and the
// kernel decides: a pull request writes only pr-<N> (reading default), a
// push to the default branch binding its head writes default, a push
// elsewhere a branch scope, a merge queue entry its commit's; the root is $PROOFGATE_CACHE_ROOT or $RUNNER_TEMP/proofgate-cache,
// never inside the workspace.
func TestCacheScopeFromEvent(t *testing.T) {
	c, err := contract.Parse("c.yaml", []byte("version: 1\nname: t\ndefaults: {image: x}\ncaches: {m: {mount: /m}}\nchecks: [{id: a, run: ['true'], caches: [m]}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	const sha = "4b825dc642cb6eb9a060e54bf8d69288fbee4904" // the commit the run binds (TestCacheScopeBoundCommit: real ones)
	for _, tc := range []struct {
		ev         event.Context
		ref, scope string
		base       string
	}{
		{event.Context{Name: "pull_request", PR: 12, DefaultBranch: "main"}, "refs/pull/12/merge", "pr-12", "default"},
		{event.Context{Name: "pull_request_target", PR: 3, DefaultBranch: "main"}, "refs/heads/main", "pr-3", "default"},
		{event.Context{Name: "push", DefaultBranch: "main", Ref: "refs/heads/main", After: sha}, "refs/heads/main", "default", ""},
		{event.Context{Name: "push", DefaultBranch: "main", Ref: "refs/heads/topic", After: sha}, "refs/heads/topic", "branch-", "default"},
		{event.Context{Name: "push", Ref: "refs/heads/main", After: sha}, "refs/heads/main", "branch-", "default"},
		{event.Context{Name: "merge_group", DefaultBranch: "main"}, "refs/heads/gh-readonly-queue/main/pr-7-" + sha, "commit-" + sha, "default"},
	} {
		env := map[string]string{"RUNNER_TEMP": tmp, "GITHUB_REF": tc.ref, "GITHUB_SHA": sha}
		var out bytes.Buffer
		ev := tc.ev
		bound := &jobsummary.Run{Report: &replay.Report{Source: eventlog.Source{Commit: sha}}}
		j := &job{o: &Options{Getenv: func(k string) string { return env[k] }}, ev: &ev, c: c, ws: t.TempDir(), s: bound}
		j.f = newWorkflow(j.o.Getenv, &out)
		s, err := j.cacheStore()
		if err != nil {
			t.Fatal(err)
		}
		if sc := s.Scope(); !strings.HasPrefix(sc.Name, tc.scope) || sc.Base != tc.base || s.Root() != filepath.Join(tmp, "proofgate-cache") {
			t.Errorf("%s %s: scope %+v root %s", tc.ev.Name, tc.ref, sc, s.Root())
		}
		if !strings.Contains(out.String(), "scope "+s.Scope().Name) {
			t.Errorf("log %q", out.String())
		}
	}
	// In a container action on a runner that mounts RUNNER_TEMP, the root
	// is under that mount (the host's $RUNNER_TEMP/proofgate-cache), not
	// under the host path RUNNER_TEMP names, which the container lacks.
	mnt := t.TempDir()
	defer func(old string) { runnerTempMount = old }(runnerTempMount)
	runnerTempMount = mnt
	renv := map[string]string{"RUNNER_TEMP": "/home/runner/work/_temp"}
	if r, err := actionCacheRoot(func(k string) string { return renv[k] }); err != nil || r != filepath.Join(mnt, "proofgate-cache") {
		t.Fatalf("root under the runner temp mount: %q %v", r, err)
	}
	renv[cache.EnvRoot] = "/explicit"
	if r, _ := actionCacheRoot(func(k string) string { return renv[k] }); r != "/explicit" {
		t.Fatalf("an explicit root is kept: %q", r)
	}
	runnerTempMount = filepath.Join(mnt, "absent")
	delete(renv, cache.EnvRoot)
	if r, _ := actionCacheRoot(func(k string) string { return renv[k] }); r != "/home/runner/work/_temp/proofgate-cache" {
		t.Fatalf("without the mount: %q", r)
	}
	// A root inside the workspace is refused.
	ws := t.TempDir()
	env := map[string]string{"PROOFGATE_CACHE_ROOT": filepath.Join(ws, "c"), "GITHUB_REF": "refs/heads/main"}
	j := &job{o: &Options{Getenv: func(k string) string { return env[k] }}, ev: &event.Context{Name: "push", DefaultBranch: "main"}, c: c, ws: ws,
		s: &jobsummary.Run{Report: &replay.Report{Source: eventlog.Source{Commit: sha}}}}
	j.f = newWorkflow(j.o.Getenv, &bytes.Buffer{})
	if _, err := j.cacheStore(); err == nil || !strings.Contains(err.Error(), "overlaps the repository") {
		t.Fatalf("root in workspace: %v", err)
	}
	// The payload's default branch is read.
	ec, err := event.Parse("push", []byte(`{"repository":{"full_name":"o/r","default_branch":"trunk"}}`))
	if err != nil || ec.DefaultBranch != "trunk" {
		t.Fatalf("%+v %v", ec, err)
	}
}
