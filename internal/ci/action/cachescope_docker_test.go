//go:build linux

package action

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// TestCacheScopeIssueCommentRun runs the action in-process, its checks in
// Docker, as an issue_comment workflow that checked out the pull
// request's head (GITHUB_REF is main, GITHUB_SHA main's head): the fetch
// check's write lands in the head commit's own scope, seeded from
// default, and default/ stays byte for byte as it was. The same event
// with main's head checked out writes default.
func TestCacheScopeIssueCommentRun(t *testing.T) {
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, strings.Replace(cachesContract, "IMAGE", helper, 1), nil)
	rt := t.TempDir()
	def := filepath.Join(rt, "proofgate-cache", "default")
	// default/ as a restore of main's save brings it: the tree and its
	// lock file (a reader's shared lock creates one where it is missing).
	writeFile(t, filepath.Join(def, "deps", "restored.txt"), "from main\n")
	writeFile(t, filepath.Join(def, "deps.lock"), "")
	fx.env["RUNNER_TEMP"] = rt
	p, err := fx.gh.WriteIssueCommentEvent(fx.wf, owner, repo, prNum, "/proofgate run")
	if err != nil {
		t.Fatal(err)
	}
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_EVENT_PATH"] = "issue_comment", p
	fx.env["GITHUB_REF"], fx.env["GITHUB_SHA"] = "refs/heads/main", fx.base

	git(t, fx.ws, "checkout", "-q", "--detach", fx.head)
	before := snapshot(t, def)
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	own := "commit-" + fx.head
	c := fx.started(t)
	if m := c["fetch"]; len(m) != 1 || m[0].Scope != own || m[0].RunScope != own || m[0].Mode != runtime.CacheReadWrite || m[0].Provenance != "seeded" {
		t.Fatalf("fetch of the PR head under issue_comment mounted %+v, want %s seeded from default\n%s", m, own, fx.log.String())
	}
	if m := c["use"]; len(m) != 1 || m[0].Scope != own {
		t.Fatalf("use mounted %+v", m)
	}
	if after := snapshot(t, def); after != before {
		t.Fatalf("a pull request's head changed default/ under issue_comment:\nbefore %s\nafter  %s", before, after)
	}
	if b, err := os.ReadFile(filepath.Join(rt, "proofgate-cache", own, "deps", "fetched.txt")); err != nil || len(b) != 7 {
		t.Fatalf("the write in %s: %q %v", own, b, err)
	}

	// The same event bound to main's head: default is its scope.
	git(t, fx.ws, "checkout", "-q", "--detach", fx.base)
	res, err = fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if m := fx.started(t)["fetch"]; len(m) != 1 || m[0].Scope != "default" || m[0].Mode != runtime.CacheReadWrite {
		t.Fatalf("fetch of main's head mounted %+v, want default", m)
	}
	if _, err := os.Stat(filepath.Join(def, "deps", "fetched.txt")); err != nil {
		t.Fatalf("main's head did not write default: %v", err)
	}
}
