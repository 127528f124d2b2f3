package app

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

const contractYAML = `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: a, run: ['true']}
  - {id: b, run: [sh, -c, 'echo out; printf "err" >&2']}
approval: {required: 1}
`

// executed makes a git repository, plans and executes one run of the
// contract there with the process runtime, and returns the state
// directory and the run.
func executed(t *testing.T) (string, *run.Run) {
	t.Helper()
	return executedWith(t, contractYAML)
}

// executedWith is executed with the contract y.
func executedWith(t *testing.T, y string) (string, *run.Run) {
	t.Helper()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	c, err := contract.Parse("contract.yaml", []byte(y), "")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(repo, ".proofgate")
	ctx := context.Background()
	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: state, Jobs: 2, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
		t.Fatal(err)
	}
	return state, r
}

func class(err error) exit.Class {
	c, _ := exit.Of(err)
	return c
}

func TestListAndOutput(t *testing.T) {
	state, r := executed(t)
	rows, refused, err := List(state)
	if err != nil || refused || len(rows) != 1 || rows[0].RunID != r.ID || rows[0].State != replay.AwaitingApproval {
		t.Fatalf("List = %+v, %v, %v", rows, refused, err)
	}
	o, err := OpenOutput(state, "latest", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	d, err := o.Doc("stdout")
	if err != nil || d.Content != "out\n" || d.Encoding != "utf-8" || d.Size != 4 || d.RunID != r.ID {
		t.Fatalf("stdout doc %+v, %v", d, err)
	}
	var b strings.Builder
	s, err := o.Stream("stderr")
	if err != nil || o.Copy(&b, s) != nil || b.String() != "err" {
		t.Fatalf("stderr %q, %v", b.String(), err)
	}
	if _, err := OpenOutput(state, "latest", "nope"); !errors.As(err, new(*NoResultError)) || class(err) != exit.Usage {
		t.Fatalf("a check without a result: %v (class %v)", err, class(err))
	}
	oa, err := OpenOutput(state, r.ID, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Close()
	if s, err := oa.Stream("stderr"); s != nil && s.Size > 0 || err != nil && class(err) != exit.Usage {
		t.Fatalf("check a's stderr: %+v, %v", s, err)
	}
}

// A blob that is not the size the log recorded is refused, and a run
// whose log does not reconcile is a refused row of the list.
func TestListAndOutputRefuse(t *testing.T) {
	state, r := executed(t)
	o, err := OpenOutput(state, r.ID, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	s, _ := o.Stream("stdout")
	path, err := blob.New(filepath.Join(r.Dir, run.BlobDir)).Path(s.Digest)
	if err != nil {
		t.Fatal(err)
	}
	blobs := []string{path}
	os.Chmod(blobs[0], 0o644)
	if err := os.WriteFile(blobs[0], []byte("out and more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Doc("stdout"); err == nil || class(err) != exit.Refused {
		t.Fatalf("a grown blob: %v (class %v)", err, class(err))
	}
	ev := filepath.Join(r.Dir, "events.ndjson")
	b, err := os.ReadFile(ev)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(ev, 0o644)
	if err := os.WriteFile(ev, []byte(strings.Replace(string(b), `"b"`, `"c"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, refused, err := List(state)
	if err != nil || !refused || len(rows) != 1 || rows[0].Error == "" {
		t.Fatalf("a tampered log: %+v, %v, %v", rows, refused, err)
	}
}

func TestConnect(t *testing.T) {
	ctx := context.Background()
	c, err := contract.Parse("contract.yaml", []byte(contractYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	rts := Connect(ctx, c, ConnectOptions{CollectGarbage: true})
	defer rts.Close()
	if len(rts.Providers) != 1 || rts.Providers["process"] == nil || len(rts.Unavailable) != 0 || rts.Collected != nil {
		t.Fatalf("a process-only contract: %+v", rts)
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	d, err := contract.Parse("contract.yaml", []byte(strings.Replace(contractYAML, "runtime: process", "runtime: docker, image: busybox", 1)), "")
	if err != nil {
		t.Fatal(err)
	}
	rts = Connect(ctx, d, ConnectOptions{CollectGarbage: true})
	defer rts.Close()
	if rts.Unavailable["docker"] == nil || rts.Providers["docker"] != nil || rts.Providers["process"] == nil {
		t.Fatalf("no daemon: %+v", rts)
	}
}
