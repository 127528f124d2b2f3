package vsa_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// made is a real bundle: a run planned, executed and approved by the
// kernel in a real git repository, exported and signed by the bundle key.
type made struct {
	archive      []byte
	commit, tree string
	contractHash string
	store        *trust.Store // trusts the bundle key
	trustJSON    []byte
}

var (
	once   sync.Once
	shared *made
)

// bundleFixture makes one bundle per test binary (a run takes a while).
func bundleFixture(t *testing.T) *made {
	t.Helper()
	once.Do(func() { shared = makeBundle(t) })
	if shared == nil {
		t.Fatal("the bundle fixture failed")
	}
	return shared
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func makeBundle(t *testing.T) *made {
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, ".proofgate"), 0o755)
	cfile := filepath.Join(repo, ".proofgate", "contract.yaml")
	os.WriteFile(cfile, []byte("version: 1\nname: vsa\ndefaults:\n  runtime: process\n  timeout: 60s\nchecks:\n  - id: hello\n    run: [sh, -c, 'echo hello']\napproval: {required: 1}\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".proofgate/runs/\n"), 0o644)
	git(t, repo, "init", "-q", ".")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	state := filepath.Join(repo, ".proofgate")
	c, err := contract.Load(cfile, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: "file:.proofgate/contract.yaml", Repo: "acme/widget"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Decide(ctx, run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: repo, StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	dir := r.Dir
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	k := keytest.New(t)
	var buf bytes.Buffer
	if _, err := bundle.Export(dir, k.Signer, &buf, bundle.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	store := trust.New()
	if _, err := store.Add(k.PubPEM, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	tj, err := json.Marshal(store)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return &made{archive: buf.Bytes(), commit: git(t, repo, "rev-parse", "HEAD"), tree: git(t, repo, "rev-parse", "HEAD^{tree}"),
		contractHash: h, store: store, trustJSON: tj}
}
