package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/fscopy"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Test-only hooks of prune (prune.go), read from the environment of the
// test binary acting as the CLI: a clock offset, a short settle time and a
// pause at each step (so that kills land in every phase).
func init() {
	if d, err := time.ParseDuration(os.Getenv("PROOFGATE_TEST_PRUNE_NOW_OFFSET")); err == nil {
		pruneNow = func() time.Time { return time.Now().Add(d) }
	}
	if d, err := time.ParseDuration(os.Getenv("PROOFGATE_TEST_PRUNE_SETTLE")); err == nil {
		pruneTestSettle = d
	}
	if d, err := time.ParseDuration(os.Getenv("PROOFGATE_TEST_PRUNE_PACE")); err == nil {
		pruneTestProgress = func(string) { time.Sleep(d) }
	}
}

const pruneContract = `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: a, run: [sh, -c, 'date +%s%N']}
approval: {required: 1}
`

// pruneState makes a repository with n COMPLETE runs and w AWAITING_APPROVAL
// runs (each of those with an old unnamed blob), through the kernel.
func pruneState(t *testing.T, n, w int, extra string) (pg, []string) {
	t.Helper()
	p := pg{t: t, dir: t.TempDir()}
	p.write(".proofgate/contract.yaml", pruneContract+extra)
	p.write(".gitignore", ".proofgate/runs/\n.proofgate/archive/\n.proofgate/prune*\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	c, err := contract.Load(filepath.Join(p.dir, ".proofgate/contract.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(p.dir, ".proofgate")
	var ids []string
	for i := range n + w {
		r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: p.dir, StateDir: state, Contract: c, Origin: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Exec(context.Background(), run.ExecOptions{RepoDir: p.dir, StateDir: state, Jobs: 1, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
			t.Fatal(err)
		}
		if i < n {
			if err := r.Decide(context.Background(), run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: p.dir, StateDir: state}}); err != nil {
				t.Fatal(err)
			}
		} else {
			b := filepath.Join(r.Dir, "blobs", "sha256", strings.Repeat("0", 63)+string(rune('a'+i%6)))
			os.WriteFile(b, []byte("unnamed"), 0o444)
		}
		ids = append(ids, r.ID)
		r.Close()
	}
	return p, ids
}

// prune runs 'clean runs' 40 days ahead with a short settle.
func (p pg) prune(extraEnv []string, args ...string) result {
	p.t.Helper()
	return p.cleanRuns([]string{"clean", "runs"}, extraEnv, args...)
}

// cleanRuns runs verb ('clean runs', or the earlier spelling 'prune') 40
// days ahead with a short settle.
func (p pg) cleanRuns(verb, extraEnv []string, args ...string) result {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], append(verb, args...)...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), mainEnv+"=1", "PROOFGATE_TEST_PRUNE_NOW_OFFSET=960h", "PROOFGATE_TEST_PRUNE_SETTLE=100ms")
	cmd.Env = append(cmd.Env, extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return res
}

func TestPruneCLI(t *testing.T) {
	p, ids := pruneState(t, 2, 1, "retention: {archive_after: 20d}\n")
	// Dry run: every setting with its source; nothing changes.
	r := p.prune([]string{retention.EnvBlobMinAge + "=2h"}, "--settle", "6s")
	if r.code != 0 {
		t.Fatalf("dry run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"dry run", "archive_after  20d      from contract (retention.archive_after)", "blob_min_age   2h       from environment (PROOFGATE_PRUNE_BLOB_MIN_AGE)", "settle         6s       from flag (--settle)", "archive 2, keep 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(p.dir, ".proofgate", retention.LogFile)); err == nil {
		t.Fatal("the dry run wrote the prune log")
	}
	// The earlier spelling is the same command (ages read at another
	// second aside).
	age := regexp.MustCompile(`is [0-9a-z.]+ old`)
	old := p.cleanRuns([]string{"prune"}, []string{retention.EnvBlobMinAge + "=2h"}, "--settle", "6s")
	if old.code != r.code || age.ReplaceAllString(old.stdout, "is N old") != age.ReplaceAllString(r.stdout, "is N old") || old.stderr != r.stderr {
		t.Fatalf("'prune' differs from 'clean runs':\n%+v\n%+v", old, r)
	}
	// Looser than the contract: refused, naming both.
	r = p.prune(nil, "--archive-after", "10d")
	if r.code != 2 || !strings.Contains(r.stderr, "--archive-after 10d") || !strings.Contains(r.stderr, "retention.archive_after") {
		t.Fatalf("looser flag: %d %s", r.code, r.stderr)
	}
	// The CLI refuses a settle below 5s from a flag.
	if r = p.prune(nil, "--settle", "1s"); r.code != 2 {
		t.Fatalf("--settle 1s: %d %s", r.code, r.stderr)
	}
	r = p.prune(nil, "--apply", "--json", "--actor", "carol")
	var res struct {
		Archived []struct{ Run, Digest string }
		Counts   retention.Counts
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || len(res.Archived) != 2 || res.Counts.BlobsReclaimed != 1 {
		t.Fatalf("apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Every reader reads the archived run.
	archived := ids[0]
	for _, args := range [][]string{{"status", archived}, {"status", archived, "--audit"}, {"events", "verify", archived}, {"output", archived, "a"}, {"list"}} {
		r := p.run("", args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		if args[0] == "status" && !strings.Contains(r.stdout, "archived: read from archive/"+archived+".tar.gz") {
			t.Errorf("status does not say it is archived:\n%s", r.stdout)
		}
	}
	kd := t.TempDir()
	p.must([]int{0}, "keygen", "-o", filepath.Join(kd, "k.pem"))
	p.must([]int{0}, "trust", "add", "--store", filepath.Join(kd, "trust.json"), "--public-key", filepath.Join(kd, "k.pub.pem"))
	bf := filepath.Join(kd, "b.tar.gz")
	if r := p.run("", "bundle", "export", archived, "--key", filepath.Join(kd, "k.pem"), "-o", bf); r.code != 0 {
		t.Errorf("bundle export of an archived run: %d %s", r.code, r.stderr)
	}
	head, err := gitOut(p.dir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if r := p.run("", "bundle", "verify", bf, "--trust", filepath.Join(kd, "trust.json"), "--commit", strings.TrimSpace(head), "--contract", ".proofgate/contract.yaml"); r.code != 0 {
		t.Errorf("bundle verify of an archived run's bundle: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := p.run("", "approve", archived, "--actor", "bob"); r.code != 1 || !strings.Contains(r.stderr, "archived") {
		t.Errorf("approve of an archived run: %d %s", r.code, r.stderr)
	}
	// Tampered: events verify says so.
	arc := filepath.Join(p.dir, ".proofgate", "archive", ids[1]+".tar.gz")
	b, _ := os.ReadFile(arc)
	b[len(b)/3] ^= 0x40
	os.Chmod(arc, 0o644)
	os.WriteFile(arc, b, 0o644)
	if r := p.run("", "events", "verify", ids[1], "--json"); r.code != 1 || !strings.Contains(r.stdout, `"reason": "archive-tampered"`) {
		t.Errorf("tampered archive: %d %s", r.code, r.stdout)
	}
	// Missing recorded archive: list and status say so; apply refuses.
	os.Remove(filepath.Join(p.dir, ".proofgate", "archive", archived+".tar.gz"))
	if r := p.run("", "list"); r.code != 1 || !strings.Contains(r.stdout, "archive-missing") {
		t.Errorf("list with a missing archive: %d %s", r.code, r.stdout)
	}
	if r := p.run("", "status", archived); r.code != 1 || !strings.Contains(r.stderr, "archive-missing") {
		t.Errorf("status with a missing archive: %d %s", r.code, r.stderr)
	}
	if r := p.prune(nil, "--apply"); r.code != 1 || !strings.Contains(r.stderr, "integrity") {
		t.Errorf("apply with a missing archive: %d %s", r.code, r.stderr)
	}
}

// snapshot is what must survive any kill: each run's chain head.
func heads(t *testing.T, state string, ids []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range ids {
		rep, err := run.Audit(filepath.Join(state, "runs", id))
		if err != nil && !strings.Contains(err.Error(), "projection-lagging") {
			t.Fatalf("run %s does not verify: %v", id, err)
		}
		if ev, err := run.ReadLog(filepath.Join(state, "runs", id)); err != nil || ev[len(ev)-1].Hash != rep.ChainHead {
			t.Fatalf("run %s: events verify: %v", id, err)
		}
		out[id] = rep.ChainHead
	}
	return out
}

func leftovers(t *testing.T, state string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, retention.PruningSuffix) || strings.HasSuffix(p, ".tmp") || d.Name() == retention.PruneLock) {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// TestPruneKilledAtRandomMoments kills a real `proofgate prune --apply`
// with SIGKILL at 24 random moments, one in each 24th of 90% of an uninterrupted
// apply's duration, each on a fresh copy of the same state: every run
// still verifies with its chain head unchanged (before any recovery), the
// next store open leaves no leftovers, and a rerun completes the prune.
// The kills must land while runs are archived and while blobs are renamed;
// a phase the 24 missed (the blob phase is short, and a loaded machine
// stretches a killed prune beyond the watched one) gets up to 16 more kills
// aimed inside the window an uninterrupted apply was seen in it.
func TestPruneKilledAtRandomMoments(t *testing.T) {
	p, ids := pruneState(t, 6, 2, "")
	pristine := filepath.Join(t.TempDir(), "pristine")
	fscopy.Tree(t, filepath.Join(p.dir, ".proofgate"), pristine)
	k := &pruneKiller{p: p, ids: ids, pristine: pristine, want: heads(t, pristine, ids), phases: map[string]int{}}
	// An uninterrupted apply, watched: its duration sets the range of the
	// kill moments, and when it was in each phase.
	full, seen := k.watch(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill moments seeded with %d; an uninterrupted apply took %s, phases seen %v", seed, full, seen)
	rng := rand.New(rand.NewPCG(seed, 3))
	const n = 24
	for i := range n {
		k.kill(t, time.Duration((float64(i)+rng.Float64())/n*0.9*float64(full)))
	}
	if k.killed < 20 || k.midway < 10 {
		t.Fatalf("only %d of %d prunes were killed, %d of them mid-way", k.killed, n, k.midway)
	}
	for extra := 0; extra < 16; extra++ {
		missing := ""
		for _, ph := range []string{"archiving", "blobs"} {
			if k.phases[ph] == 0 {
				missing = ph
			}
		}
		w, ok := seen[missing]
		if missing == "" || !ok {
			break
		}
		k.kill(t, w[0]+time.Duration(rng.Float64()*float64(w[1]-w[0])))
	}
	if k.phases["archiving"] == 0 || k.phases["blobs"] == 0 {
		t.Fatalf("kills by phase %v: not every phase was hit (an uninterrupted apply was seen in %v)", k.phases, seen)
	}
	t.Logf("%d kills (%d left a prune's leftovers; by phase %v) over an apply of %s", k.killed, k.midway, k.phases, full)
}

// watch runs an uninterrupted `prune --apply` on a fresh copy of the
// state, polling it every millisecond, and returns how long it took and,
// per phase, the first and last moment it was seen in.
func (k *pruneKiller) watch(t *testing.T) (time.Duration, map[string][2]time.Duration) {
	t.Helper()
	state := filepath.Join(k.p.dir, ".proofgate")
	os.RemoveAll(state)
	fscopy.Tree(t, k.pristine, state)
	cmd := exec.Command(os.Args[0], "prune", "--apply")
	cmd.Dir = k.p.dir
	cmd.Env = append(os.Environ(), mainEnv+"=1", "PROOFGATE_TEST_PRUNE_NOW_OFFSET=960h", "PROOFGATE_TEST_PRUNE_SETTLE=100ms", pruneTestPace)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := map[string][2]time.Duration{}
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("an uninterrupted apply: %v", err)
			}
			return time.Since(start), seen
		case <-time.After(time.Millisecond):
		}
		at, ph := time.Since(start), phaseOf(state, k.ids[:6])
		w, ok := seen[ph]
		if !ok {
			w[0] = at
		}
		w[1] = at
		seen[ph] = w
	}
}

// pruneTestPace slows each step of a test prune, so kills land inside it.
const pruneTestPace = "PROOFGATE_TEST_PRUNE_PACE=15ms"

// pruneKiller kills prunes of a fresh copy of pristine and checks what
// each leaves.
type pruneKiller struct {
	p              pg
	ids            []string
	pristine       string
	want           map[string]string
	killed, midway int
	phases         map[string]int
}

// kill starts `prune --apply` on a fresh copy of the state, kills it at
// at, and checks: heads unchanged, recovery leaves no leftovers and no
// problems, a rerun archives every COMPLETE run and removes the unnamed
// blobs.
func (k *pruneKiller) kill(t *testing.T, at time.Duration) {
	t.Helper()
	p, ids, state := k.p, k.ids, filepath.Join(k.p.dir, ".proofgate")
	os.RemoveAll(state)
	fscopy.Tree(t, k.pristine, state)
	cmd := exec.Command(os.Args[0], "prune", "--apply")
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), mainEnv+"=1", "PROOFGATE_TEST_PRUNE_NOW_OFFSET=960h", "PROOFGATE_TEST_PRUNE_SETTLE=100ms", pruneTestPace)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(at)
	cmd.Process.Signal(syscall.SIGKILL)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		k.killed++
	} else if err != nil {
		t.Fatalf("kill at %s: prune failed on its own: %v", at, err)
	}
	// Before any recovery, every run verifies with its head.
	if got := heads(t, state, ids); !mapsEqual(got, k.want) {
		t.Fatalf("kill at %s: heads changed: %v, want %v", at, got, k.want)
	}
	// The next store open restores the leftovers.
	if len(leftovers(t, state)) > 0 {
		k.midway++
	}
	k.phases[phaseOf(state, ids[:6])]++
	if err := run.Recover(state); err != nil {
		t.Fatalf("kill at %s: recover: %v", at, err)
	}
	if l := leftovers(t, state); len(l) > 0 {
		t.Fatalf("kill at %s: leftovers after recovery: %v", at, l)
	}
	if probs, err := retention.Problems(state); err != nil || len(probs) > 0 {
		t.Fatalf("kill at %s: problems %v %v", at, probs, err)
	}
	// A rerun completes: every COMPLETE run archived, the unnamed blobs
	// gone, and still every head the same.
	if r := p.prune(nil, "--apply"); r.code != 0 {
		t.Fatalf("kill at %s: rerun: %d %s", at, r.code, r.stderr)
	}
	h, err := retention.ReadHistory(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:6] {
		if _, ok := h.Archived[id]; !ok || !retention.IsArchived(filepath.Join(state, "runs", id)) {
			t.Fatalf("kill at %s: run %s not archived after the rerun", at, id)
		}
	}
	if got := heads(t, state, ids); !mapsEqual(got, k.want) {
		t.Fatalf("kill at %s: heads after the rerun %v", at, got)
	}
	if l := leftovers(t, state); len(l) > 0 {
		t.Fatalf("kill at %s: leftovers after the rerun: %v", at, l)
	}
	for _, id := range ids[6:] {
		if m, _ := filepath.Glob(filepath.Join(state, "runs", id, "blobs", "sha256", "000000*")); len(m) != 0 {
			t.Fatalf("kill at %s: unnamed blob survived the rerun: %v", at, m)
		}
	}
}

// phaseOf says where a killed prune was: before archiving, archiving
// (some runs archived or an archive half-written), blobs (.pruning names),
// or after.
func phaseOf(state string, archivable []string) string {
	n := 0
	for _, id := range archivable {
		if retention.IsArchived(filepath.Join(state, "runs", id)) {
			n++
		}
	}
	if m, _ := filepath.Glob(filepath.Join(state, "runs", "*", "blobs", "sha256", "*"+retention.PruningSuffix)); len(m) > 0 {
		return "blobs"
	}
	tmp, _ := filepath.Glob(filepath.Join(state, "archive", ".*.tmp"))
	switch {
	case n == 0 && len(tmp) == 0:
		return "before"
	case n < len(archivable) || len(tmp) > 0:
		return "archiving"
	}
	return "after-archiving"
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// With --key an apply records a signed checkpoint of what it archives
// first, and refuses when a chain does not verify.
func TestPruneWithKey(t *testing.T) {
	p, ids := pruneState(t, 2, 0, "")
	key := filepath.Join(t.TempDir(), "k.pem")
	if r := p.run("", "keygen", "-o", key); r.code != 0 {
		t.Fatal(r.stderr)
	}
	// A broken chain in one run: refused, nothing archived.
	ev := filepath.Join(p.dir, ".proofgate", "runs", ids[1], "events.ndjson")
	orig, _ := os.ReadFile(ev)
	os.WriteFile(ev, bytes.Replace(orig, []byte(`"seq":2`), []byte(`"seq":9`), 1), 0o644)
	if r := p.prune(nil, "--apply", "--key", key); r.code != 1 || !strings.Contains(r.stderr, "chain") {
		t.Fatalf("apply --key with a broken chain: %d %s", r.code, r.stderr)
	}
	if retention.IsArchived(filepath.Join(p.dir, ".proofgate", "runs", ids[0])) {
		t.Fatal("archived although a chain did not verify")
	}
	os.WriteFile(ev, orig, 0o644)
	if r := p.prune(nil, "--apply", "--key", key); r.code != 0 {
		t.Fatalf("apply --key: %d %s", r.code, r.stderr)
	}
	evs, err := eventlog.ReadFile(filepath.Join(p.dir, ".proofgate", retention.LogFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if !slices.Equal(types, []string{"prune.checkpoint", "prune.archived", "prune.archived", "prune.applied"}) {
		t.Fatalf("prune log %v", types)
	}
	var cp retention.CheckpointData
	if err := json.Unmarshal(evs[0].Data, &cp); err != nil || len(cp.Runs) != 2 || cp.Runs[0].Run != ids[0] || !bytes.Contains(cp.Envelope, []byte(app.PrunePayloadType)) {
		t.Fatalf("checkpoint %s", evs[0].Data)
	}
}

// TestPruneCrashAtEveryLogAppend kills prune --apply at each of its prune
// log appends (before it, mid-line, after it; eventlog.CrashEnv): the
// archived lines and prune.applied. Each time every run verifies, the torn
// line is tolerated, recovery leaves nothing and a rerun completes.
func TestPruneCrashAtEveryLogAppend(t *testing.T) {
	p, ids := pruneState(t, 2, 1, "")
	state := filepath.Join(p.dir, ".proofgate")
	pristine := filepath.Join(t.TempDir(), "pristine")
	fscopy.Tree(t, state, pristine)
	want := heads(t, pristine, ids)
	for _, mode := range crashModes {
		for n := 1; n <= 3; n++ {
			os.RemoveAll(state)
			fscopy.Tree(t, pristine, state)
			r := p.prune([]string{eventlog.CrashEnv + "=" + mode + ":" + string(rune('0'+n))}, "--apply")
			if r.code == 0 {
				t.Fatalf("%s:%d: prune was not killed", mode, n)
			}
			if got := heads(t, state, ids); !mapsEqual(got, want) {
				t.Fatalf("%s:%d: heads %v", mode, n, got)
			}
			if r := p.run("", "list"); r.code != 0 {
				t.Fatalf("%s:%d: list after the crash: %d %s%s", mode, n, r.code, r.stdout, r.stderr)
			}
			if l := leftovers(t, state); len(l) > 0 {
				t.Fatalf("%s:%d: leftovers after a store open: %v", mode, n, l)
			}
			if r := p.prune(nil, "--apply"); r.code != 0 {
				t.Fatalf("%s:%d: rerun: %d %s", mode, n, r.code, r.stderr)
			}
			h, err := retention.ReadHistory(state)
			if err != nil || len(h.Archived) != 2 {
				t.Fatalf("%s:%d: history %v %v", mode, n, h, err)
			}
			if got := heads(t, state, ids); !mapsEqual(got, want) {
				t.Fatalf("%s:%d: heads after the rerun %v", mode, n, got)
			}
		}
	}
}

// With --key, a tampered archive of an earlier apply also refuses.
func TestPruneWithKeyRefusesTamperedArchive(t *testing.T) {
	p, ids := pruneState(t, 1, 0, "")
	if r := p.prune(nil, "--apply"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	key := filepath.Join(t.TempDir(), "k.pem")
	p.run("", "keygen", "-o", key)
	arc := filepath.Join(p.dir, ".proofgate", "archive", ids[0]+".tar.gz")
	os.Chmod(arc, 0o644)
	f, _ := os.OpenFile(arc, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{0})
	f.Close()
	if r := p.prune(nil, "--apply", "--key", key); r.code != 1 || !strings.Contains(r.stderr, "archive-tampered") {
		t.Fatalf("apply --key over a tampered archive: %d %s", r.code, r.stderr)
	}
}

// The state-wide checkpoint reads archived runs like the others: signed
// over a pruned state it verifies; a run whose archive and placeholder
// are removed is a deleted run to it, and an integrity error to list.
func TestPruneThenStateCheckpoint(t *testing.T) {
	p, ids := pruneState(t, 2, 1, "")
	if r := p.prune(nil, "--apply"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	dir := t.TempDir()
	key, cp, trust := filepath.Join(dir, "k.pem"), filepath.Join(dir, "state.json"), filepath.Join(dir, "trust.json")
	p.must([]int{0}, "keygen", "-o", key)
	p.must([]int{0}, "trust", "add", "--store", trust, "--public-key", filepath.Join(dir, "k.pub.pem"))
	p.must([]int{0}, "events", "checkpoint", "--all", "--key", key, "--repo-id", "acme/w", "-o", cp)
	if r := p.must([]int{0}, "events", "verify", "--all", "--checkpoint", cp, "--trust", trust, "--repo-id", "acme/w"); !strings.Contains(r.stdout, "ok: 3 runs") {
		t.Fatalf("verify --all over a pruned state:\n%s", r.stdout)
	}
	os.RemoveAll(filepath.Join(p.dir, ".proofgate", "runs", ids[0]))
	os.Remove(filepath.Join(p.dir, ".proofgate", "archive", ids[0]+".tar.gz"))
	if r := p.run("", "events", "verify", "--all", "--checkpoint", cp, "--trust", trust, "--repo-id", "acme/w", "--json"); r.code != 1 || !strings.Contains(r.stdout, "checkpoint-") {
		t.Fatalf("a removed archived run: %d %s", r.code, r.stdout)
	}
	if r := p.run("", "list", "--json"); r.code != 1 || !strings.Contains(r.stdout, `"run_id": "`+ids[0]+`"`) || !strings.Contains(r.stdout, "archive-missing") {
		t.Fatalf("list after a removed archived run: %d %s", r.code, r.stdout)
	}
}

// Hostile: `proofgate prune --apply` racing a live `proofgate run` on the
// same state directory, as separate processes. The live run (locked,
// not terminal) is untouched and finishes; the old runs are archived; every
// run verifies afterwards.
func TestPruneRacesLiveRunProcess(t *testing.T) {
	p, ids := pruneState(t, 3, 0, "")
	p.write(".proofgate/contract.yaml", strings.Replace(pruneContract, "checks:\n", "checks:\n  - {id: slow, run: [sh, -c, 'sleep 1.5; date +%s%N']}\n", 1))
	p.git("commit", "-q", "-am", "slow check")
	cmd := exec.Command(os.Args[0], "run", "--quiet")
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the live run exists and holds its lock.
	var live string
	for deadline := time.Now().Add(20 * time.Second); live == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, id := range p.runs() {
			if !slices.Contains(ids, id) && run.ValidID(id) {
				if _, err := os.Stat(filepath.Join(p.dir, ".proofgate", "runs", id, "events.lock")); err == nil {
					live = id
				}
			}
		}
	}
	if live == "" {
		t.Fatalf("no live run appeared: %s", out.String())
	}
	r := p.prune(nil, "--apply", "--json")
	if r.code != 0 {
		t.Fatalf("prune beside a live run: %d %s", r.code, r.stderr)
	}
	var res struct{ Runs []retention.RunPlan }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	for _, rp := range res.Runs {
		if rp.Run == live && (rp.Decision != retention.Keep || !strings.Contains(rp.Reason, "live writer")) {
			t.Fatalf("the live run's plan: %+v", rp)
		}
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("the live run: %v\n%s", err, out.String())
	}
	state := filepath.Join(p.dir, ".proofgate")
	if retention.IsArchived(filepath.Join(state, "runs", live)) {
		t.Fatal("the live run was archived")
	}
	for _, id := range ids {
		if !retention.IsArchived(filepath.Join(state, "runs", id)) {
			t.Errorf("old run %s was not archived", id)
		}
	}
	heads(t, state, append(ids, live))
	if r := p.run("", "status", live); r.code != 3 {
		t.Fatalf("status of the live run after the prune: %d %s%s", r.code, r.stdout, r.stderr)
	}
}
