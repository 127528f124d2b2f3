package app

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// planned makes a git repository and plans one run of contractYAML there,
// released for the next writer; it returns the repository and the run id.
func planned(t *testing.T) (repo, id string) {
	t.Helper()
	repo = t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	c, err := contract.Parse("contract.yaml", []byte(contractYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: repo, StateDir: filepath.Join(repo, ".proofgate"), Contract: c, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return repo, r.ID
}

// Two shards executed apart and signed merge into the run, which then
// awaits approval; a merge missing a shard is refused.
func TestShardsExecAndMerge(t *testing.T) {
	repo, id := planned(t)
	state := filepath.Join(repo, ".proofgate")
	k, ts := trusted(t)
	ctx := context.Background()
	var dirs []string
	for _, s := range []string{"1/2", "2/2"} {
		spec, err := shard.ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		o := ShardOptions{Spec: spec, Out: filepath.Join(t.TempDir(), "shard"), Key: k.Signer,
			Exec: run.ExecOptions{RepoDir: repo, StateDir: state, Jobs: 1, Runtimes: map[string]runtime.Runtime{"process": process.New()}}}
		res, err := ExecShard(ctx, id, o)
		if err != nil || len(res.Checks) != 1 {
			t.Fatalf("shard %s: %+v, %v", s, res, err)
		}
		dirs = append(dirs, res.Dir)
	}
	store, err := trust.Load(ts)
	if err != nil {
		t.Fatal(err)
	}
	v := &bundle.ShardVerifier{Keys: store}
	var me *shard.MergeError
	if _, err := Merge(ctx, state, id, dirs[:1], v); !errors.As(err, &me) {
		t.Fatalf("a missing shard: %v", err)
	}
	m, err := Merge(ctx, state, id, dirs, v)
	if err != nil || m.Shards != 2 || m.Checks != 2 || m.Report.State != replay.AwaitingApproval {
		t.Fatalf("merge %+v, %v", m, err)
	}
}
