package shard

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// contractYAML has a dependency chain a -> b -> c, a pair d -> e and
// independent checks.
func contractYAML(extra int, sleep string) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: t\ndefaults: {runtime: process, timeout: 20s}\napproval: {required: 1}\nchecks:\n")
	b.WriteString("  - {id: a, run: [sh, -c, 'echo a']}\n  - {id: b, run: [sh, -c, 'echo b'], depends_on: [a]}\n")
	b.WriteString("  - {id: c, run: [sh, -c, 'echo c >&2'], depends_on: [b]}\n  - {id: d, run: ['true']}\n")
	b.WriteString("  - {id: e, run: ['true'], depends_on: [d]}\n")
	for i := range extra {
		fmt.Fprintf(&b, "  - {id: x%02d, run: [sh, -c, 'echo x%02d%s']}\n", i, i, sleep)
	}
	return b.String()
}

type fixture struct {
	repo, state string
	c           *contract.Resolved
	id          string
}

func newFixture(t *testing.T, yaml string) *fixture {
	t.Helper()
	repo := t.TempDir()
	for name, body := range map[string]string{"README.md": "hi\n", ".gitignore": ".proofgate/\nout/\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q", ".")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	c, err := contract.Parse("contract.yaml", []byte(yaml), "")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{repo: repo, state: filepath.Join(repo, ".proofgate"), c: c}
	f.id = f.plan(t, f.state)
	return f
}

func (f *fixture) plan(t *testing.T, state string) string {
	t.Helper()
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: f.repo, StateDir: state, Contract: f.c, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.ID
}

// copyRun copies the planned run into a fresh state directory, as a shard
// job receives it.
func (f *fixture) copyRun(t *testing.T) string {
	t.Helper()
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(f.state, "runs", f.id), filepath.Join(state, "runs", f.id)).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return state
}

func (f *fixture) runOpts(state string) run.ExecOptions {
	return run.ExecOptions{RepoDir: f.repo, StateDir: state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 4}
}

// execShard executes shard i of n in its own copy of the run.
func (f *fixture) execShard(t *testing.T, i, n int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", i))
	state := f.copyRun(t)
	res, err := Exec(context.Background(), state, f.id, ExecOptions{Spec: Spec{i, n}, Out: out, Run: f.runOpts(state)})
	if err != nil {
		t.Fatalf("exec shard %d/%d: %v", i, n, err)
	}
	if res.Dir != out || (res.Failed != 0) != slices.Contains(res.Checks, "bad") || res.Length != len(res.Checks)*2+2 {
		t.Fatalf("shard %d/%d: %+v", i, n, res)
	}
	return out
}

func (f *fixture) execAll(t *testing.T, n int) []string {
	var dirs []string
	for i := 1; i <= n; i++ {
		dirs = append(dirs, f.execShard(t, i, n))
	}
	return dirs
}

func (f *fixture) merge(dirs []string, opts MergeOptions) (*MergeResult, error) {
	return Merge(context.Background(), f.state, f.id, dirs, opts)
}

var unsigned = MergeOptions{Unsigned: true}

func wantReason(t *testing.T, err error, want Reason) *MergeError {
	t.Helper()
	var me *MergeError
	if !errors.As(err, &me) || me.Reason != want {
		t.Fatalf("err = %v, want a MergeError %s", err, want)
	}
	return me
}

func TestParseSpec(t *testing.T) {
	for _, ok := range []string{"1/1", "3/10", "256/256"} {
		if _, err := ParseSpec(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "3", "0/3", "4/3", "1/0", "01/3", "-1/3", "1/257", "a/b", "1/3/4", " 1/3"} {
		var se *SpecError
		if _, err := ParseSpec(bad); !errors.As(err, &se) || !strings.Contains(err.Error(), "--shard") {
			t.Errorf("%q: err = %v, want a SpecError naming --shard", bad, err)
		}
	}
}

func TestAssignDeterministicAndKeepsChains(t *testing.T) {
	c, err := contract.Parse("c.yaml", []byte(contractYAML(20, "")), "")
	if err != nil {
		t.Fatal(err)
	}
	a1, err := Assign(c.Checks, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Reversing the contract's order changes no shard's set of checks.
	rev := append([]contract.Check(nil), c.Checks...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	a2, _ := Assign(rev, 4)
	shardOf := map[string]int{}
	total := 0
	for i := range a1 {
		total += len(a1[i])
		for _, id := range a1[i] {
			shardOf[id] = i
		}
		if len(a1[i]) != len(a2[i]) {
			t.Fatalf("shard %d: %v vs %v", i, a1[i], a2[i])
		}
	}
	if total != len(c.Checks) {
		t.Fatalf("%d checks assigned, want %d", total, len(c.Checks))
	}
	if shardOf["a"] != shardOf["b"] || shardOf["b"] != shardOf["c"] || shardOf["d"] != shardOf["e"] {
		t.Fatalf("a chain was split: %v", a1)
	}
	for i := range a1 {
		if n := len(a1[i]); n < 6 || n > 7 {
			t.Fatalf("unbalanced: %v", a1)
		}
	}
	if _, err := Assign(c.Checks, 0); err == nil {
		t.Fatal("Assign(0) accepted")
	}
}

func TestMergeShardsCountsEveryCheckOnce(t *testing.T) {
	f := newFixture(t, contractYAML(6, ""))
	dirs := f.execAll(t, 3)
	res, err := f.merge([]string{dirs[2], dirs[0], dirs[1]}, unsigned)
	if err != nil {
		t.Fatal(err)
	}
	if res.Shards != 3 || res.Checks != len(f.c.Checks) || res.State != string(replay.AwaitingApproval) {
		t.Fatalf("merge: %+v", res)
	}
	dir := filepath.Join(f.state, "runs", f.id)
	rep, err := replay.Audit(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != len(f.c.Checks) || rep.VerificationDigest == "" {
		t.Fatalf("report: %d checks, digest %q", len(rep.Checks), rep.VerificationDigest)
	}
	events, err := eventlog.ReadFile(filepath.Join(dir, run.EventsFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range events {
		counts[e.Type]++
	}
	if counts[replay.TypeShardMerged] != 3 || counts[replay.TypeCheckFinished] != len(f.c.Checks) {
		t.Fatalf("event counts %v", counts)
	}
	// A second merge of the same shards is refused: the run merged once.
	var se *run.StateError
	if _, err := f.merge(dirs, unsigned); !errors.As(err, &se) {
		t.Fatalf("second merge: %v, want a StateError", err)
	}
}

func TestMergeRefusesAShardOfAnotherRun(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	dirs := f.execAll(t, 2)
	g := *f
	g.id = f.plan(t, f.state) // a second run of the same contract and commit
	_, err := g.merge(dirs, unsigned)
	wantReason(t, err, Foreign)
}

func TestMergeRefusesAShardOfAnotherCommit(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	dirs := f.execAll(t, 2)
	rewrite(t, dirs[1], func(m *replay.ShardManifest, _ []eventlog.Event) []eventlog.Event {
		m.Source.Commit = strings.Repeat("0", 40)
		return nil
	})
	_, err := f.merge(dirs, unsigned)
	wantReason(t, err, Foreign)
	// The executor itself refuses a work tree on another commit.
	if err := os.WriteFile(filepath.Join(f.repo, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "second")
	state := f.copyRun(t)
	var se *run.StaleError
	if _, err := Exec(context.Background(), state, f.id, ExecOptions{Spec: Spec{1, 2}, Out: filepath.Join(t.TempDir(), "s"), Run: f.runOpts(state)}); !errors.As(err, &se) {
		t.Fatalf("exec on another commit: %v, want a StaleError", err)
	}
}

func TestMergeRefusesAShardExecutedTwice(t *testing.T) {
	f := newFixture(t, contractYAML(4, ""))
	dirs := f.execAll(t, 3)
	again := f.execShard(t, 2, 3)
	_, err := f.merge(append(dirs, again), unsigned)
	me := wantReason(t, err, Duplicate)
	if me.Dir != again {
		t.Fatalf("duplicate names %s, want %s", me.Dir, again)
	}
	// The same directory given twice is a duplicate too.
	_, err = f.merge(append(dirs, dirs[0]), unsigned)
	wantReason(t, err, Duplicate)
}

func TestMergeRefusesAMissingShard(t *testing.T) {
	f := newFixture(t, contractYAML(4, ""))
	dirs := f.execAll(t, 3)
	_, err := f.merge(dirs[:2], unsigned)
	me := wantReason(t, err, Missing)
	if !strings.Contains(me.Detail, "shard 3/3") {
		t.Fatalf("detail %q", me.Detail)
	}
	// Shards of another split (1/2 with 2/3, 3/3) are foreign to each other.
	half := f.execShard(t, 1, 2)
	_, err = f.merge([]string{dirs[1], dirs[2], half}, unsigned)
	wantReason(t, err, Foreign)
}

// editResult makes check id's recorded result claim another exit code and
// re-chains the log from that line on.
func editResult(id string) func(*replay.ShardManifest, []eventlog.Event) []eventlog.Event {
	return func(_ *replay.ShardManifest, events []eventlog.Event) []eventlog.Event {
		for i, e := range events {
			if e.Type == replay.TypeCheckFinished && bytes.Contains(e.Data, []byte(`"check":"`+id+`"`)) {
				events[i].Data = bytes.Replace(e.Data, []byte(`"duration_ms":`), []byte(`"duration_ms":1`), 1)
			}
		}
		return events
	}
}

func TestMergeRefusesAShardLogEditedAndRechained(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	dirs := f.execAll(t, 2)
	// The log is edited and re-chained (a valid chain), the manifest left.
	rechain(t, dirs[0], editResult("a"), false)
	_, err := f.merge(dirs, unsigned)
	wantReason(t, err, Tampered)
}

func TestMergeRefusesAnEditedShardWithARewrittenManifestUnlessSigned(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	pub, priv, _ := ed25519.GenerateKey(nil)
	dirs := f.execAll(t, 2)
	for _, d := range dirs {
		testSign(t, d, priv)
	}
	v := edVerifier{pub}
	if _, err := Merge(context.Background(), f.copyMergeState(t), f.id, dirs, MergeOptions{Verifier: v}); err != nil {
		t.Fatalf("signed shards: %v", err)
	}
	// Edit, re-chain and rewrite the manifest to match: only the
	// signature can tell, and it does.
	rechain(t, dirs[0], editResult("a"), true)
	_, err := f.merge(dirs, MergeOptions{Verifier: v})
	wantReason(t, err, Untrusted)
}

func TestMergeRefusesACheckInTwoShards(t *testing.T) {
	f := newFixture(t, contractYAML(4, ""))
	pickChecks = func(assigned [][]string, s Spec) []string {
		if s.Index == 2 {
			return append(assigned[1], "x00")
		}
		return assigned[s.Index-1]
	}
	defer func() { pickChecks = nil }()
	a, _ := Assign(f.c.Checks, 3)
	for _, id := range a[1] {
		if id == "x00" {
			t.Fatalf("fixture: x00 is already shard 2's: %v", a)
		}
	}
	dirs := f.execAll(t, 3)
	_, err := f.merge(dirs, unsigned)
	me := wantReason(t, err, Overlap)
	if !strings.Contains(me.Detail, `"x00"`) {
		t.Fatalf("detail %q", me.Detail)
	}
}

func TestMergeRefusesAnUntrustedSigner(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	dirs := f.execAll(t, 2)
	trusted, _, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	for _, d := range dirs {
		testSign(t, d, other)
	}
	_, err := f.merge(dirs, MergeOptions{Verifier: edVerifier{trusted}})
	wantReason(t, err, Untrusted)
	// No verifier at all is refused too, unless the merge says Unsigned.
	_, err = f.merge(dirs, MergeOptions{})
	wantReason(t, err, Untrusted)
	// An unsigned shard under a verifier is refused.
	os.Remove(filepath.Join(dirs[1], SignatureFile))
	_, err = f.merge(dirs, MergeOptions{Verifier: edVerifier{trusted}})
	wantReason(t, err, Untrusted)
}

func TestMergeRefusesAShardStillRunning(t *testing.T) {
	f := newFixture(t, contractYAML(1, "; sleep 2"))
	dirs := f.execAll(t, 2)
	// A shard directory whose executor holds its lock.
	out := filepath.Join(t.TempDir(), "running")
	state := f.copyRun(t)
	started := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, err := Exec(ctx, state, f.id, ExecOptions{Spec: Spec{2, 2}, Out: out, Run: f.runOpts(state)})
		started <- err
	}()
	// Shard 2 holds x00, which sleeps 2 s.
	waitFor(t, filepath.Join(out, LockFile))
	_, err := f.merge([]string{dirs[0], out}, unsigned)
	wantReason(t, err, Running)
	cancel()
	<-started
	// A directory without shard.json (an executor that died) is refused.
	os.Remove(filepath.Join(dirs[0], ManifestFile))
	_, err = f.merge(dirs, unsigned)
	wantReason(t, err, Running)
}

func TestMergeRefusesADependencySplitAcrossShards(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	dirs := f.execAll(t, 2)
	// Claim that the shard holding b did not execute a (b's dependency):
	// a executed elsewhere, after b.
	for _, d := range dirs {
		rewrite(t, d, func(m *replay.ShardManifest, _ []eventlog.Event) []eventlog.Event {
			if i := indexOf(m.Checks, "a"); i >= 0 {
				m.Checks = append(m.Checks[:i:i], m.Checks[i+1:]...)
			}
			return nil
		})
	}
	_, err := f.merge(dirs, unsigned)
	wantReason(t, err, Order)
}

func TestShardLogIsNotARunLog(t *testing.T) {
	f := newFixture(t, contractYAML(1, ""))
	dirs := f.execAll(t, 1)
	dir := filepath.Join(f.state, "runs", f.id)
	own, err := eventlog.ReadFile(filepath.Join(dir, run.EventsFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := eventlog.Binding{Run: own[0].Run, Source: own[0].Source, Contract: own[0].Contract}
	// Every line of the shard log is bound to the shard, not the run: read
	// as the run's log, the first line is already foreign.
	_, err = eventlog.ReadFile(filepath.Join(dirs[0], LogFile), &b)
	var ce *eventlog.ChainError
	if !errors.As(err, &ce) || ce.Reason != eventlog.ForeignBinding || ce.Line != 1 {
		t.Fatalf("shard log read as the run's: %v, want foreign-binding at line 1", err)
	}
	// And the run's replay knows none of the shard log's own events.
	for _, typ := range []string{replay.TypeShardOpened, replay.TypeShardClosed} {
		for _, w := range []replay.Writer{replay.WriterKernel, replay.WriterAppend, replay.WriterSession} {
			if replay.MayWrite(typ, w) {
				t.Fatalf("%s is a run event", typ)
			}
		}
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func waitFor(t *testing.T, p string) {
	t.Helper()
	for range 400 {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}

// copyMergeState is a fresh copy of the planned run to merge into.
func (f *fixture) copyMergeState(t *testing.T) string { return f.copyRun(t) }

// rewrite edits a shard's manifest (and, when edit returns events, its
// log, re-chained) and writes the manifest back canonical, unsigned.
func rewrite(t *testing.T, dir string, edit func(*replay.ShardManifest, []eventlog.Event) []eventlog.Event) {
	t.Helper()
	rechainWith(t, dir, edit, true)
}

func rechain(t *testing.T, dir string, edit func(*replay.ShardManifest, []eventlog.Event) []eventlog.Event, manifest bool) {
	t.Helper()
	rechainWith(t, dir, edit, manifest)
}

func rechainWith(t *testing.T, dir string, edit func(*replay.ShardManifest, []eventlog.Event) []eventlog.Event, writeManifest bool) {
	t.Helper()
	mp := filepath.Join(dir, ManifestFile)
	mb, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var m replay.ShardManifest
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	lp := filepath.Join(dir, LogFile)
	events, err := eventlog.ReadFile(lp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if edited := edit(&m, events); edited != nil {
		b := eventlog.Binding{Run: events[0].Run, Source: events[0].Source, Contract: events[0].Contract}
		os.Remove(lp)
		lg, err := eventlog.Create(lp, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range edited {
			if _, err := lg.Append(e.Type, e.Data); err != nil {
				t.Fatal(err)
			}
		}
		m.Log = replay.ChainRef{Length: lg.Len(), Head: lg.Head()}
		lg.Close()
		lb, _ := os.ReadFile(lp)
		m.Events = sha256Hex(lb)
	}
	if !writeManifest {
		return
	}
	nb, err := canon.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(mp, 0o644)
	if err := os.WriteFile(mp, nb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// edVerifier is a test Verifier: shard.sig is the raw Ed25519 signature
// of shard.json (the bundle package's verifier reads DSSE envelopes).
type edVerifier struct{ pub ed25519.PublicKey }

func (v edVerifier) VerifyShard(manifest, sig, _ []byte) error {
	if !ed25519.Verify(v.pub, manifest, sig) {
		return errors.New("signature does not verify")
	}
	return nil
}

func testSign(t *testing.T, dir string, priv ed25519.PrivateKey) {
	t.Helper()
	mb, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SignatureFile), ed25519.Sign(priv, mb), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMergedRunAuditChecksItsShardLogs(t *testing.T) {
	f := newFixture(t, contractYAML(3, ""))
	dirs := f.execAll(t, 3)
	if _, err := f.merge(dirs, unsigned); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.state, "runs", f.id)
	if _, err := replay.Audit(dir); err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(dir, replay.ShardDir, "2")
	os.Chmod(filepath.Join(stored, ManifestFile), 0o644)
	// The stored shard log edited, re-chained and its manifest rewritten:
	// shard.merged in the run's log records the old manifest's digest.
	rechain(t, stored, editResult("d"), true)
	rechain(t, stored, editResult("x00"), true)
	var ae *replay.AuditError
	if _, err := replay.Audit(dir); !errors.As(err, &ae) || ae.Reason != replay.ReasonShard {
		t.Fatalf("audit: %v, want reason shard", err)
	}
}

// A run log in which a shard.merged is missing, or a check is recorded
// twice, does not replay.
func TestMergedRunReplayCountsEachCheckOnce(t *testing.T) {
	f := newFixture(t, contractYAML(3, ""))
	dirs := f.execAll(t, 3)
	if _, err := f.merge(dirs, unsigned); err != nil {
		t.Fatal(err)
	}
	events, err := eventlog.ReadFile(filepath.Join(f.state, "runs", f.id, run.EventsFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	drop := func(keep func(i int, e eventlog.Event) bool) []eventlog.Event {
		var out []eventlog.Event
		for i, e := range events {
			if keep(i, e) {
				out = append(out, e)
			}
		}
		return out
	}
	merged := 0
	noShard2 := drop(func(_ int, e eventlog.Event) bool {
		if e.Type == replay.TypeShardMerged {
			merged++
			return merged != 2
		}
		return true
	})
	var twice []eventlog.Event
	for _, e := range events {
		twice = append(twice, e)
		if e.Type == replay.TypeShardMerged && len(twice) > 0 && twice[len(twice)-2].Type == replay.TypeCheckFinished {
			twice = append(twice[:len(twice)-1], twice[len(twice)-2], e) // the shard's last result again
		}
	}
	for name, evs := range map[string][]eventlog.Event{"a shard.merged dropped": noShard2, "a result twice": twice} {
		if _, err := replay.Fold(f.c, rechainEvents(t, evs)); err == nil {
			t.Errorf("%s: the log replays", name)
		}
	}
	if _, err := replay.Fold(f.c, events); err != nil {
		t.Fatalf("the merged log: %v", err)
	}
}

// rechainEvents re-writes events as a fresh, valid chain.
func rechainEvents(t *testing.T, events []eventlog.Event) []eventlog.Event {
	t.Helper()
	p := filepath.Join(t.TempDir(), "events.ndjson")
	lg, err := eventlog.Create(p, eventlog.Binding{Run: events[0].Run, Source: events[0].Source, Contract: events[0].Contract})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	for _, e := range events {
		if _, err := lg.Append(e.Type, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	return lg.Events()
}

// A merge killed right after its state change (the run VERIFYING, nothing
// recorded) is resumed by the next merge; a run with results is not.
func TestMergeResumesAfterAKilledMerge(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	dirs := f.execAll(t, 2)
	p := filepath.Join(f.state, "runs", f.id, run.EventsFile)
	lg, err := eventlog.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Append(replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Verifying}); err != nil {
		t.Fatal(err)
	}
	lg.Close()
	res, err := f.merge(dirs, unsigned)
	if err != nil || res.State != string(replay.AwaitingApproval) {
		t.Fatalf("resumed merge: %v %+v", err, res)
	}
	if _, err := replay.Audit(filepath.Join(f.state, "runs", f.id)); err != nil {
		t.Fatal(err)
	}
	var se *run.StateError
	if _, err := f.merge(dirs, unsigned); !errors.As(err, &se) {
		t.Fatalf("merge of a merged run: %v", err)
	}
}

// A failing check in one shard blocks the merged run; a shard that saw
// another work tree makes it STALE, as a single exec would.
func TestMergedRunConcludesAsExec(t *testing.T) {
	f := newFixture(t, contractYAML(2, "")+"  - {id: bad, run: [sh, -c, 'exit 3']}\n")
	dirs := f.execAll(t, 2)
	res, err := f.merge(dirs, unsigned)
	if err != nil || res.State != string(replay.Blocked) {
		t.Fatalf("merge with a failing check: %v %+v", err, res)
	}

	g := newFixture(t, contractYAML(2, ""))
	gd := g.execAll(t, 2)
	rechain(t, gd[1], func(_ *replay.ShardManifest, events []eventlog.Event) []eventlog.Event {
		last := &events[len(events)-1]
		var d replay.ShardClosedData
		if err := json.Unmarshal(last.Data, &d); err != nil {
			t.Fatal(err)
		}
		d.Worktree.Digest = "sha256:" + strings.Repeat("ab", 32)
		b, _ := json.Marshal(d)
		last.Data = b
		return events
	}, true)
	res, err = g.merge(gd, unsigned)
	if err != nil || res.State != string(replay.Stale) {
		t.Fatalf("merge of a shard that saw another work tree: %v %+v", err, res)
	}
	if _, err := replay.Audit(filepath.Join(g.state, "runs", g.id)); err != nil {
		t.Fatal(err)
	}
}

// More shards than dependency components: the extra shards run nothing,
// and still merge (every index of 1..N is accounted for).
func TestMergeWithEmptyShards(t *testing.T) {
	f := newFixture(t, contractYAML(0, ""))
	a, err := Assign(f.c.Checks, 4)
	if err != nil || len(a[2]) != 0 || len(a[3]) != 0 {
		t.Fatalf("assignment %v %v", a, err)
	}
	dirs := f.execAll(t, 4)
	res, err := f.merge(dirs, unsigned)
	if err != nil || res.Shards != 4 || res.Checks != 5 || res.State != string(replay.AwaitingApproval) {
		t.Fatalf("merge: %v %+v", err, res)
	}
	if _, err := replay.Audit(filepath.Join(f.state, "runs", f.id)); err != nil {
		t.Fatal(err)
	}
}

// TestMergeCarriesProducts: a check's products (ADR 0039) come with its
// shard into the merged run, whose blob store then holds them; a shard
// whose manifest leaves a product's blob out is refused.
func TestMergeCarriesProducts(t *testing.T) {
	yaml := contractYAML(2, "") + "  - {id: p, run: [sh, -c, 'mkdir -p out && printf bin > out/p.bin'], produces: [out/p.bin]}\n"
	f := newFixture(t, yaml)
	dirs := f.execAll(t, 2)
	if _, err := f.merge(dirs, unsigned); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.state, "runs", f.id)
	rep, err := replay.Audit(dir)
	if err != nil {
		t.Fatal(err)
	}
	var products []replay.Product
	for _, c := range rep.Checks {
		products = append(products, c.Products...)
	}
	if len(products) != 1 || products[0].Path != "out/p.bin" || products[0].Size != 3 {
		t.Fatalf("merged products %+v", products)
	}
	if err := blob.New(filepath.Join(dir, run.BlobDir)).Verify(products[0].Digest); err != nil {
		t.Fatalf("the merged run's blob store: %v", err)
	}

	g := newFixture(t, yaml)
	dirs = g.execAll(t, 2)
	for _, d := range dirs {
		rewrite(t, d, func(m *replay.ShardManifest, _ []eventlog.Event) []eventlog.Event {
			m.Blobs = slices.DeleteFunc(m.Blobs, func(b string) bool { return b == products[0].Digest })
			return nil
		})
	}
	_, err = g.merge(dirs, unsigned)
	if me := wantReason(t, err, Tampered); !strings.Contains(me.Error(), "product out/p.bin") {
		t.Fatalf("merge without the product's blob: %v", err)
	}
}
