package shard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// trivialYAML is a contract of n trivial checks.
func trivialYAML(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: t\ndefaults: {runtime: process, timeout: 20s}\napproval: {required: 1}\nchecks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: c%03d, run: [echo, c%03d]}\n", i, i)
	}
	return b.String()
}

// BenchmarkMerge measures Merge of 10 signed-off (unsigned here: the
// signature is bundle's) shards of n trivial checks into a fresh copy of
// the planned run per iteration: linear in n.
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{50, 100, 200} {
		b.Run(fmt.Sprintf("checks=%d", n), func(b *testing.B) {
			benchMerge(b, n)
		})
	}
}

func benchMerge(b *testing.B, n int) {
	f := benchFixture(b, trivialYAML(n))
	var dirs []string
	for i := 1; i <= 10; i++ {
		state := f.copyRunTB(b)
		out := filepath.Join(b.TempDir(), "s")
		if _, err := Exec(context.Background(), state, f.id, ExecOptions{Spec: Spec{i, 10}, Out: out,
			Run: run.ExecOptions{RepoDir: f.repo, StateDir: state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 4}}); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, out)
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		state := f.copyRunTB(b)
		b.StartTimer()
		if _, err := Merge(context.Background(), state, f.id, dirs, unsigned); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/check")
}

func benchFixture(b *testing.B, yaml string) *fixture {
	repo := b.TempDir()
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi\n"), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".proofgate/\n"), 0o644)
	for _, args := range [][]string{{"init", "-q", "."}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git: %v %s", err, out)
		}
	}
	c, err := contract.Parse("contract.yaml", []byte(yaml), "")
	if err != nil {
		b.Fatal(err)
	}
	f := &fixture{repo: repo, state: filepath.Join(repo, ".proofgate"), c: c}
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: repo, StateDir: f.state, Contract: c, Origin: "test"})
	if err != nil {
		b.Fatal(err)
	}
	f.id = r.ID
	r.Close()
	return f
}

func (f *fixture) copyRunTB(tb testing.TB) string {
	state := tb.TempDir()
	os.MkdirAll(filepath.Join(state, "runs"), 0o755)
	if out, err := exec.Command("cp", "-a", filepath.Join(f.state, "runs", f.id), filepath.Join(state, "runs", f.id)).CombinedOutput(); err != nil {
		tb.Fatalf("cp: %v %s", err, out)
	}
	return state
}
