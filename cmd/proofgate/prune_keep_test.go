package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Issue 25 class 5: prune never makes a retained run unexportable.

// successorState makes a repository with an implementation run A
// (IMPLEMENTING, then SUPERSEDED by B) and its successor B, COMPLETE.
func successorState(t *testing.T) (p pg, a, b string) {
	t.Helper()
	p = pg{t: t, dir: t.TempDir()}
	p.write(".proofgate/contract.yaml", pruneContract)
	p.write(".gitignore", ".proofgate/runs/\n.proofgate/archive/\n.proofgate/prune*\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	c, err := contract.Load(filepath.Join(p.dir, ".proofgate/contract.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(p.dir, ".proofgate")
	ctx := context.Background()
	popts := run.PlanOptions{RepoDir: p.dir, StateDir: state, Contract: c, Origin: "test", Implement: true}
	ra, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	ra.Close()
	p.write("agent.txt", "the agent's change\n")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "agent")
	popts.Implement, popts.ImplementedBy = false, ra.ID
	rb, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if err := rb.Exec(ctx, run.ExecOptions{RepoDir: p.dir, StateDir: state, Jobs: 1, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
		t.Fatal(err)
	}
	if err := rb.Decide(ctx, run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: p.dir, StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	return p, ra.ID, rb.ID
}

// Hostile: a successor and its implementation run, both archived by one
// apply. The successor's bundle still exports (it reads the implementation
// run from its archive), byte for byte as before the prune, and verifies
// with its implementation run.
func TestPruneKeepsSuccessorExportable(t *testing.T) {
	p, a, b := successorState(t)
	kd := t.TempDir()
	key, trust := filepath.Join(kd, "k.pem"), filepath.Join(kd, "trust.json")
	p.must([]int{0}, "keygen", "-o", key)
	p.must([]int{0}, "trust", "add", "--store", trust, "--public-key", filepath.Join(kd, "k.pub.pem"))
	before := filepath.Join(kd, "before.tar.gz")
	p.must([]int{0}, "bundle", "export", b, "--key", key, "-o", before)
	agentBefore := filepath.Join(kd, "before.agent-session.tar.gz")
	p.must([]int{0}, "bundle", "agent-session", b, "--key", key, "-o", agentBefore)

	r := p.prune(nil, "--apply", "--json")
	if r.code != 0 {
		t.Fatalf("apply: %d %s%s", r.code, r.stdout, r.stderr)
	}
	state := filepath.Join(p.dir, ".proofgate")
	for _, id := range []string{a, b} {
		if !retention.IsArchived(filepath.Join(state, "runs", id)) {
			t.Fatalf("run %s was not archived:\n%s", id, r.stdout)
		}
	}
	after := filepath.Join(kd, "after.tar.gz")
	if r := p.run("", "bundle", "export", b, "--key", key, "-o", after); r.code != 0 {
		t.Fatalf("bundle export of an archived successor: %d %s", r.code, r.stderr)
	}
	x, _ := os.ReadFile(before)
	y, _ := os.ReadFile(after)
	if !bytes.Equal(x, y) {
		t.Fatal("the bundle exported from the archives differs from the one exported before the prune")
	}
	r = p.must([]int{0}, "bundle", "verify", after, "--trust", trust, "--any-source", "--any-contract")
	if !strings.Contains(r.stdout, "implemented by: run "+a) {
		t.Fatalf("verify does not name the implementation run:\n%s", r.stdout)
	}
	// The agent-session evidence of the archived successor too.
	agentAfter := filepath.Join(kd, "after.agent-session.tar.gz")
	if r := p.run("", "bundle", "agent-session", b, "--key", key, "-o", agentAfter); r.code != 0 {
		t.Fatalf("agent-session export of an archived successor: %d %s", r.code, r.stderr)
	}
	x, _ = os.ReadFile(agentBefore)
	y, _ = os.ReadFile(agentAfter)
	if !bytes.Equal(x, y) {
		t.Fatal("the agent-session evidence exported from the archives differs from the one exported before the prune")
	}
}

// Hostile: a live successor whose implementation run is archived (a prune
// that could not read the successor, or an older prune) still exports.
func TestExportReadsArchivedImplementationRun(t *testing.T) {
	p, a, b := successorState(t)
	kd := t.TempDir()
	key := filepath.Join(kd, "k.pem")
	p.must([]int{0}, "keygen", "-o", key)
	before := filepath.Join(kd, "before.tar.gz")
	p.must([]int{0}, "bundle", "export", b, "--key", key, "-o", before)
	// A retained run names A: the apply keeps it. Archive it as a prune
	// that cannot read B does (B's log moved aside for the apply).
	state := filepath.Join(p.dir, ".proofgate")
	aside := filepath.Join(kd, "b-events")
	evs := filepath.Join(state, "runs", b, "events.ndjson")
	if err := os.Rename(evs, aside); err != nil {
		t.Fatal(err)
	}
	r := p.prune(nil, "--apply", "--json")
	if err := os.Rename(aside, evs); err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || !retention.IsArchived(filepath.Join(state, "runs", a)) {
		t.Fatalf("apply did not archive A: %d %s%s", r.code, r.stdout, r.stderr)
	}
	after := filepath.Join(kd, "after.tar.gz")
	if r := p.run("", "bundle", "export", b, "--key", key, "-o", after); r.code != 0 {
		t.Fatalf("bundle export of a live successor with an archived implementation run: %d %s", r.code, r.stderr)
	}
	x, _ := os.ReadFile(before)
	y, _ := os.ReadFile(after)
	if !bytes.Equal(x, y) {
		t.Fatal("the bundle differs from the one exported before the prune")
	}
}
