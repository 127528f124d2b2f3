package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
)

// Issue 25 class 5: prune never removes what a live writer is producing.

// startCollect starts `evidence collect slow --run id` as a real process
// and waits until its collection directory holds the partial stdout.
func startCollect(t *testing.T, p pg, id, allowlist string) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "evidence", "collect", "slow", "--claim", "it answers slowly", "--run", id, "--allowlist", allowlist, "--json")
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(p.dir, ".proofgate", "runs", id, "evidence")
	before, _ := filepath.Glob(filepath.Join(root, "*", "slow.stdout"))
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(root, "*", "slow.stdout"))
		for _, f := range m {
			if b, _ := os.ReadFile(f); len(b) > 0 && !slices.Contains(before, f) {
				return cmd, out, filepath.Dir(f)
			}
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("no partial collection appeared: %s", out.String())
	return nil, nil, ""
}

type prunePlanJSON struct {
	Run, Decision, Reason string
	Writer                *struct {
		PID int `json:"pid"`
	} `json:"writer"`
}

type pruneJSON struct {
	Runs     []prunePlanJSON
	Archived []struct{ Run string }
	Skipped  []prunePlanJSON
}

func parsePrune(t *testing.T, r result) pruneJSON {
	t.Helper()
	var v pruneJSON
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil {
		t.Fatalf("prune: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return v
}

func (v pruneJSON) plan(id string) prunePlanJSON {
	for _, rp := range v.Runs {
		if rp.Run == id {
			return rp
		}
	}
	return prunePlanJSON{}
}

func (v pruneJSON) archived(id string) bool {
	for _, a := range v.Archived {
		if a.Run == id {
			return true
		}
	}
	return false
}

// Hostile: `prune --apply` while a real `evidence collect --run` is
// producing its collection in an old COMPLETE run. The run is skipped, the
// report says a live writer holds it (text and --json), the collection
// finishes and is chained; once the writer is gone the next apply archives
// the run with its collection.
func TestPruneSkipsLiveEvidenceCollect(t *testing.T) {
	p, ids := pruneState(t, 2, 0, "")
	id := ids[0]
	al := evidenceAllowlist(t, map[string]any{"slow": shCommand(t, `echo partial; sleep 2; echo done`, 20, 4096)}, 0o600)
	cmd, out, col := startCollect(t, p, id, al)
	text := p.prune(nil, "--apply")
	if text.code != 0 {
		t.Fatalf("apply beside a live collector: %d %s%s", text.code, text.stdout, text.stderr)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the collector failed beside a prune: %v\n%s", err, out.String())
	}
	var c collectJSON
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || c.Run != id || c.Dir != col {
		t.Fatalf("collect: %v %s", err, out.String())
	}
	if b, err := os.ReadFile(filepath.Join(col, "slow.stdout")); err != nil || string(b) != "partial\ndone\n" {
		t.Fatalf("the collection's stdout: %q %v", b, err)
	}
	state := filepath.Join(p.dir, ".proofgate")
	if retention.IsArchived(filepath.Join(state, "runs", id)) {
		t.Fatal("the run a live collector writes was archived")
	}
	if !retention.IsArchived(filepath.Join(state, "runs", ids[1])) {
		t.Fatal("the other old run was not archived")
	}
	if !strings.Contains(text.stdout, id) || !strings.Contains(text.stdout, "a live writer") || !strings.Contains(text.stdout, "evidence collect") {
		t.Fatalf("the text report does not say why the run was skipped:\n%s", text.stdout)
	}
	if n := countEvents(t, state, id, "evidence.collected"); n != 1 {
		t.Fatalf("the collection is chained %d times", n)
	}

	// The same with --json, the collector started again.
	cmd, out, _ = startCollect(t, p, id, al)
	pr := p.prune(nil, "--apply", "--json")
	v := parsePrune(t, pr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the second collector: %v\n%s\nprune:\n%s", err, out.String(), pr.stdout)
	}
	rp := v.plan(id)
	if v.archived(id) || rp.Decision != retention.Keep || !strings.Contains(rp.Reason, "evidence collect") || rp.Writer == nil || rp.Writer.PID != cmd.Process.Pid {
		t.Fatalf("the live collector's run in --json: %+v", rp)
	}

	// Writer gone: the next apply archives the run, collections and all.
	v = parsePrune(t, p.prune(nil, "--apply", "--json"))
	if !v.archived(id) {
		t.Fatalf("the run was not archived once its writers were gone: %+v", v.plan(id))
	}
	if n := countEvents(t, state, id, "evidence.collected"); n != 2 {
		t.Fatalf("the archived run's log chains %d collections, want 2", n)
	}
	p.must([]int{0}, "status", id, "--audit")
}

// A collector killed by SIGKILL leaves its lease behind: prune judges the
// owner dead and archives the run, the partial collection with it.
func TestPruneReclaimsAfterKilledCollector(t *testing.T) {
	p, ids := pruneState(t, 1, 0, "")
	id := ids[0]
	al := evidenceAllowlist(t, map[string]any{"slow": shCommand(t, `echo partial; sleep 30; echo done`, 60, 4096)}, 0o600)
	cmd, _, col := startCollect(t, p, id, al)
	// Kill the collector, then the command it started (in its own
	// process group, it outlives the collector).
	children := childPIDs(cmd.Process.Pid)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range children {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	// The killed collector's lease is left behind, its owner dead.
	if m, _ := filepath.Glob(filepath.Join(p.dir, ".proofgate", "runs", id, "events.lock.lease.*")); len(m) != 1 {
		t.Fatalf("leases left by the killed collector: %v", m)
	}
	v := parsePrune(t, p.prune(nil, "--apply", "--json"))
	if !v.archived(id) {
		t.Fatalf("a dead collector's run was not archived: %+v", v.plan(id))
	}
	// The partial collection is in the archive.
	rd, _, done, err := run.ReadDir(filepath.Join(p.dir, ".proofgate"), id)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	rel, _ := filepath.Rel(filepath.Join(p.dir, ".proofgate", "runs", id), col)
	if b, err := os.ReadFile(filepath.Join(rd, rel, "slow.stdout")); err != nil || string(b) != "partial\n" {
		t.Fatalf("the partial collection in the archive: %q %v", b, err)
	}
	for _, e := range mustReadDir(t, filepath.Join(rd)) {
		if strings.Contains(e, "lease") {
			t.Fatalf("the archive holds the dead writer's lease %s", e)
		}
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// childPIDs lists the children of process pid (every thread's).
func childPIDs(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(w); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// countEvents counts the events of type typ in run id's log (read from its
// archive when archived).
func countEvents(t *testing.T, state, id, typ string) int {
	t.Helper()
	evs, err := run.ReadLog(filepath.Join(state, "runs", id))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}
