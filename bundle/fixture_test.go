package bundle

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// fixture is a real git repository with a real run made by the kernel.
type fixture struct {
	repo, state, runDir, id string
	commit, tree            string
}

type runOpts struct {
	approve  []string // actors approving
	reject   bool
	script   string // the check's shell script
	required int
	profile  string // the contract profile the run is planned with ("" = base)
	dirty    bool   // plan on a work tree with an uncommitted file (--allow-dirty)
	// reviews are the GitHub reviews the approvals come from, by actor.
	reviews map[string]*replay.GitHubReview
	// produces are the check's produces: globs (ADR 0039).
	produces []string
}

// anyRun verifies integrity only: any source, any contract.
var anyRun = VerifyOptions{AnySource: true, AnyContract: true}

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

// makeRun plans, executes and decides a run through the kernel's API.
// contractRepo makes a git repository with one commit holding contract
// as .proofgate/contract.yaml (runs ignored), and returns it and the
// contract's path.
func contractRepo(t testing.TB, contract string) (repo, cfile string) {
	t.Helper()
	repo = t.TempDir()
	cfile = filepath.Join(repo, ".proofgate", "contract.yaml")
	if err := os.MkdirAll(filepath.Dir(cfile), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string]string{cfile: contract, filepath.Join(repo, ".gitignore"): ".proofgate/runs/\n"} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q", ".")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	return repo, cfile
}

func makeRun(t testing.TB, o runOpts) *fixture {
	t.Helper()
	if o.script == "" {
		o.script = "echo hello; echo oops >&2"
	}
	if o.required == 0 {
		o.required = 1
	}
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, ".proofgate"), 0o755)
	cfile := filepath.Join(repo, ".proofgate", "contract.yaml")
	os.WriteFile(cfile, []byte(fmt.Sprintf(`version: 1
name: fixture
defaults:
  runtime: process
  timeout: 60s
  output_limit: 200MiB
checks:
  - id: hello
    run: [sh, -c, %q]%s
approval: {required: %d}
profiles:
  quick:
    checks:
      - id: hello
        timeout: 5s
  nightly:
    extends: quick
`, o.script, producesLine(o.produces), o.required)), 0o644)
	ignore := ".proofgate/runs/\n"
	if len(o.produces) > 0 {
		ignore += "dist/\n" // what the check produces is not source
	}
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(ignore), 0o644)
	git(t, repo, "init", "-q", ".")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	state := filepath.Join(repo, ".proofgate")
	c, err := contract.Load(cfile, o.profile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if o.dirty {
		os.WriteFile(filepath.Join(repo, "uncommitted.txt"), []byte("not in any commit\n"), 0o644)
	}
	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: "file:.proofgate/contract.yaml", Repo: "acme/widget", AllowDirty: o.dirty})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	fresh := run.Freshness{RepoDir: repo, StateDir: state}
	for _, a := range o.approve {
		if err := r.Decide(ctx, run.DecisionOptions{Actor: a, Fresh: fresh, GitHub: o.reviews[a]}); err != nil {
			t.Fatal(err)
		}
	}
	if o.reject {
		if err := r.Decide(ctx, run.DecisionOptions{Actor: "mallory", Reject: true, Reason: "no", Fresh: fresh}); err != nil {
			t.Fatal(err)
		}
	}
	id, dir := r.ID, r.Dir
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return &fixture{repo: repo, state: state, runDir: dir, id: id,
		commit: git(t, repo, "rev-parse", "HEAD"), tree: git(t, repo, "rev-parse", "HEAD^{tree}")}
}

// producesLine is the check's produces: member for globs, "" for none.
func producesLine(globs []string) string {
	if len(globs) == 0 {
		return ""
	}
	return fmt.Sprintf("\n    produces: [%s]", strings.Join(globs, ", "))
}

type signingKey struct {
	s      *key.Signer
	pubPEM []byte
	path   string
}

func newKey(t testing.TB) *signingKey {
	t.Helper()
	k := keytest.New(t)
	return &signingKey{s: k.Signer, pubPEM: k.PubPEM, path: k.Path}
}

func storeWith(t testing.TB, keys ...*signingKey) *trust.Store {
	t.Helper()
	st := trust.New()
	for _, k := range keys {
		if _, err := st.Add(k.pubPEM, "", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func loadKey(p string) (*key.Signer, error) { return key.Load(p) }
