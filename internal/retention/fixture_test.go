package retention_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

const contractYAML = `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: a, run: [sh, -c, 'date +%s%N']}
  - {id: b, run: [sh, -c, 'echo out; echo err >&2']}
approval: {required: 1}
`

type fixture struct {
	t           testing.TB
	repo, state string
	c           *contract.Resolved
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	repo := t.TempDir()
	for name, body := range map[string]string{"README.md": "hi\n", ".gitignore": ".proofgate/runs/\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "."}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	c, err := contract.Parse("contract.yaml", []byte(contractYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, repo: repo, state: filepath.Join(repo, ".proofgate"), c: c}
}

// awaiting plans and executes a run, left AWAITING_APPROVAL and closed.
func (f *fixture) awaiting() string {
	f.t.Helper()
	r := f.planned(run.PlanOptions{})
	defer r.Close()
	f.exec(r)
	return r.ID
}

func (f *fixture) planned(o run.PlanOptions) *run.Run {
	f.t.Helper()
	o.RepoDir, o.StateDir, o.Contract, o.Origin = f.repo, f.state, f.c, "test"
	r, err := run.Plan(context.Background(), o)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) exec(r *run.Run) {
	f.t.Helper()
	if err := r.Exec(context.Background(), run.ExecOptions{RepoDir: f.repo, StateDir: f.state, Jobs: 2,
		Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
		f.t.Fatal(err)
	}
}

// complete returns the id of a new COMPLETE run.
func (f *fixture) complete() string {
	f.t.Helper()
	r := f.planned(run.PlanOptions{})
	defer r.Close()
	f.exec(r)
	if err := r.Decide(context.Background(), run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: f.repo, StateDir: f.state}}); err != nil {
		f.t.Fatal(err)
	}
	return r.ID
}

// cancelled returns the id of a new CANCELLED run.
func (f *fixture) cancelled() string {
	f.t.Helper()
	r := f.planned(run.PlanOptions{})
	defer r.Close()
	if err := r.Cancel("alice", "not needed"); err != nil {
		f.t.Fatal(err)
	}
	return r.ID
}

func (f *fixture) dir(id string) string { return filepath.Join(f.state, "runs", id) }

// settings are the defaults with a short settle (tests only).
func settings(t testing.TB) retention.Settings {
	t.Helper()
	s, err := retention.Resolve(nil, retention.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	s.Settle.Value = 200 * time.Millisecond
	return s
}

// later is a clock 40 days ahead: every run is past the default age.
func later() time.Time { return time.Now().Add(40 * 24 * time.Hour) }

func (f *fixture) apply(now func() time.Time) *retention.Result {
	f.t.Helper()
	res, err := retention.Apply(context.Background(), f.state, retention.Options{Settings: settings(f.t), Actor: "tester", Now: now, UnsafeShortSettle: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func gitCommit(t *testing.T, repo string) {
	t.Helper()
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "change"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
