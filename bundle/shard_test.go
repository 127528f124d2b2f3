package bundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// shardYAML is a contract of n trivial checks with a dependency chain.
func shardYAML(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: shards\ndefaults: {runtime: process, timeout: 30s}\napproval: {required: 1}\nchecks:\n")
	for i := range n {
		dep := ""
		if i == 1 || i == 2 {
			dep = fmt.Sprintf(", depends_on: [c%03d]", i-1)
		}
		fmt.Fprintf(&b, "  - {id: c%03d, run: [echo, c%03d]%s}\n", i, i, dep)
	}
	return b.String()
}

// shardRun is a planned run, executed as n shards each in its own copy
// of the run, signed with k; merged when merge is set, then approved.
type shardRun struct {
	repo, state, id, dir string
	dirs                 []string
	c                    *contract.Resolved
}

func planShards(t testing.TB, checks int) *shardRun {
	t.Helper()
	repo, cfile := contractRepo(t, shardYAML(checks))
	c, err := contract.Load(cfile, "")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(repo, ".proofgate")
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: "file:.proofgate/contract.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	sr := &shardRun{repo: repo, state: state, id: r.ID, dir: r.Dir, c: c}
	r.Close()
	return sr
}

func (sr *shardRun) execShards(t testing.TB, n int, k *signingKey) {
	t.Helper()
	for i := 1; i <= n; i++ {
		state := t.TempDir()
		os.MkdirAll(filepath.Join(state, "runs"), 0o755)
		if out, err := exec.Command("cp", "-a", sr.dir, filepath.Join(state, "runs", sr.id)).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		out := filepath.Join(t.TempDir(), "shard")
		_, err := shard.Exec(context.Background(), state, sr.id, shard.ExecOptions{Spec: shard.Spec{Index: i, Count: n}, Out: out,
			Run: run.ExecOptions{RepoDir: sr.repo, StateDir: state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 4}})
		if err != nil {
			t.Fatal(err)
		}
		if err := SignShard(out, k.s); err != nil {
			t.Fatal(err)
		}
		sr.dirs = append(sr.dirs, out)
	}
}

func (sr *shardRun) mergeAndApprove(t testing.TB, k *signingKey) {
	t.Helper()
	if _, err := shard.Merge(context.Background(), sr.state, sr.id, sr.dirs, shard.MergeOptions{Verifier: &ShardVerifier{Keys: storeWith(t, k)}}); err != nil {
		t.Fatal(err)
	}
	r, err := run.Open(sr.state, sr.id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Decide(context.Background(), run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: sr.repo, StateDir: sr.state}}); err != nil {
		t.Fatal(err)
	}
}

func exportBytes(t testing.TB, dir string, k *signingKey) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Export(dir, k.s, &buf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func wantShardSig(t *testing.T, err error, want Reason) {
	t.Helper()
	var se *ShardSignatureError
	if !errors.As(err, &se) || se.Reason != want {
		t.Fatalf("err = %v, want a ShardSignatureError %s", err, want)
	}
}

func TestShardSignatureVerifies(t *testing.T) {
	sr := planShards(t, 6)
	k, other := newKey(t), newKey(t)
	sr.execShards(t, 2, k)
	dir := sr.dirs[0]
	m, _ := os.ReadFile(filepath.Join(dir, replay.ShardManifestFile))
	sig, _ := os.ReadFile(filepath.Join(dir, replay.ShardSignatureFile))
	if err := (&ShardVerifier{Keys: storeWith(t, k)}).VerifyShard(m, sig, nil); err != nil {
		t.Fatal(err)
	}
	wantShardSig(t, (&ShardVerifier{Keys: storeWith(t, other)}).VerifyShard(m, sig, nil), UnknownKey)
	wantShardSig(t, (&ShardVerifier{}).VerifyShard(m, sig, nil), UnknownKey)
	// The signature of another shard's manifest does not verify this one.
	m2, _ := os.ReadFile(filepath.Join(sr.dirs[1], replay.ShardManifestFile))
	wantShardSig(t, (&ShardVerifier{Keys: storeWith(t, k)}).VerifyShard(m2, sig, nil), SubjectMismatch)
	// A flipped signature byte.
	bad := bytes.Replace(sig, []byte(`"sig":"`), []byte(`"sig":"A`), 1)
	if err := (&ShardVerifier{Keys: storeWith(t, k)}).VerifyShard(m, bad, nil); err == nil {
		t.Fatal("a corrupted signature verified")
	}
	// A revoked key.
	st := storeWith(t, k)
	if err := st.Revoke(k.s.KeyID(), nil); err != nil {
		t.Fatal(err)
	}
	wantShardSig(t, (&ShardVerifier{Keys: st}).VerifyShard(m, sig, nil), KeyRevoked)
	// Signing twice is refused.
	if err := SignShard(dir, k.s); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second signature: %v", err)
	}
}

func TestMergedBundleVerifiesEndToEnd(t *testing.T) {
	sr := planShards(t, 12)
	k := newKey(t)
	sr.execShards(t, 3, k)
	sr.mergeAndApprove(t, k)
	b := exportBytes(t, sr.dir, k)
	res, err := Verify(bytes.NewReader(b), storeWith(t, k), VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Run.Checks) != 12 {
		t.Fatalf("%d checks", len(res.Run.Checks))
	}
	files := 0
	list, _ := archive.Read(bytes.NewReader(b), archive.DefaultLimits)
	for _, f := range list {
		if isShardFile(f.Name) {
			files++
		}
	}
	if files != 9 { // 3 shards x events.ndjson, shard.json, shard.sig
		t.Fatalf("%d shard files in the bundle", files)
	}
	// Gate options work unchanged.
	var ve *VerifyError
	if _, err := Verify(bytes.NewReader(b), storeWith(t, k), VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 2}); !errors.As(err, &ve) || ve.Reason != InsufficientApprovals {
		t.Fatalf("two approvals: %v", err)
	}
}

// A merged bundle whose shard log was altered (and re-signed by the bundle
// key, so only the shard check can tell) is refused.
func TestMergedBundleRefusesAnAlteredShardLog(t *testing.T) {
	sr := planShards(t, 8)
	k := newKey(t)
	sr.execShards(t, 2, k)
	sr.mergeAndApprove(t, k)
	stored := filepath.Join(sr.dir, replay.ShardDir, "2", replay.EventsFile)
	orig, err := os.ReadFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func([]byte) []byte{
		"a flipped byte": func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/2] ^= 1; return b },
		"a dropped event": func(b []byte) []byte {
			l := bytes.SplitAfter(b, []byte("\n"))
			return bytes.Join(append(l[:2:2], l[3:]...), nil)
		},
		"another stdout":   func(b []byte) []byte { return bytes.Replace(b, []byte(`"exit_code":0`), []byte(`"exit_code":0 `), 1) },
		"an extra newline": func(b []byte) []byte { return append(bytes.Clone(b), '\n') },
	} {
		os.Chmod(stored, 0o644)
		if err := os.WriteFile(stored, edit(orig), 0o644); err != nil {
			t.Fatal(err)
		}
		// Export audits first: it refuses to pack it.
		var ee *ExportError
		if _, err := Export(sr.dir, k.s, &bytes.Buffer{}, ExportOptions{}); !errors.As(err, &ee) {
			t.Fatalf("%s: export: %v", name, err)
		}
	}
	os.WriteFile(stored, orig, 0o644)
	good := exportBytes(t, sr.dir, k)
	// Re-pack the bundle with the altered log and re-sign it: the statement
	// covers the altered bytes, the shard check still refuses.
	altered := rebundle(t, good, k, "shards/2/events.ndjson", func(data []byte) []byte {
		return bytes.Replace(data, []byte(`"exit_code":0`), []byte(`"exit_code":1`), 1)
	})
	var ve *VerifyError
	if _, err := Verify(bytes.NewReader(altered), storeWith(t, k), anyRun); !errors.As(err, &ve) || ve.Reason != ShardMismatch {
		t.Fatalf("altered shard log: %v, want %s", err, ShardMismatch)
	}
	// A shard file dropped from the bundle.
	dropped := rebundle(t, good, k, "shards/1/shard.json", func([]byte) []byte { return nil })
	if _, err := Verify(bytes.NewReader(dropped), storeWith(t, k), anyRun); !errors.As(err, &ve) || ve.Reason != MissingFile {
		t.Fatalf("dropped shard.json: %v, want %s", err, MissingFile)
	}
}

// rebundle edits one file of a bundle (fn returning nil drops it) and
// re-signs the statement over the new subjects with k, as a bundle signer
// gone rogue would: only the shard check can tell.
func rebundle(t *testing.T, b []byte, k *signingKey, name string, fn func([]byte) []byte) []byte {
	t.Helper()
	fs := edit(files(t, b), name, fn)
	fs = resign(t, fs, k, func(st *Statement) { st.Subject = subjectsFor(fs) })
	return repack(t, fs)
}

// BenchmarkVerifyMergedVsSingle200 verifies, interleaved, the bundle of
// 200 trivial checks run as 10 merged shards and the bundle of the same 200
// checks run on one machine; ratio is merged / single wall time (goal
// <= 1.2).
func BenchmarkVerifyMergedVsSingle200(b *testing.B) {
	k := newKey(b)
	sr := planShards(b, 200)
	sr.execShards(b, 10, k)
	sr.mergeAndApprove(b, k)
	merged := exportBytes(b, sr.dir, k)
	one := planShards(b, 200)
	r, err := run.Open(one.state, one.id)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Exec(context.Background(), run.ExecOptions{RepoDir: one.repo, StateDir: one.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 4}); err != nil {
		b.Fatal(err)
	}
	r.Close()
	one.approveSingle(b)
	single := exportBytes(b, one.dir, k)
	st := storeWith(b, k)
	var tm, ts time.Duration
	verify := func(data []byte) time.Duration {
		start := time.Now()
		if _, err := Verify(bytes.NewReader(data), st, anyRun); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for b.Loop() {
		tm += verify(merged)
		ts += verify(single)
	}
	b.ReportMetric(float64(tm.Microseconds())/float64(b.N)/1000, "merged-ms/op")
	b.ReportMetric(float64(ts.Microseconds())/float64(b.N)/1000, "single-ms/op")
	b.ReportMetric(float64(tm)/float64(ts), "ratio")
	b.ReportMetric(float64(len(merged))/float64(len(single)), "size-ratio")
}

func (sr *shardRun) approveSingle(t testing.TB) {
	r, err := run.Open(sr.state, sr.id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Decide(context.Background(), run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: sr.repo, StateDir: sr.state}}); err != nil {
		t.Fatal(err)
	}
}

// A keyless shard: shard.sig with the keyless keyid, the material beside
// it; verified against its CA, refused by another CA's verifiers or
// without the material, and merged through internal/shard.
func TestKeylessShardSignature(t *testing.T) {
	sr := planShards(t, 4)
	k := newKey(t)
	sr.execShards(t, 1, k)
	dir := sr.dirs[0]
	os.Chmod(filepath.Join(dir, replay.ShardSignatureFile), 0o644)
	os.Remove(filepath.Join(dir, replay.ShardSignatureFile))
	ca := sigtest.NewCA(0xca)
	s := ca.NewKeylessSigner(2, time.Now().UTC())
	if err := SignShardWith(context.Background(), dir, s); err != nil {
		t.Fatal(err)
	}
	m, _ := os.ReadFile(filepath.Join(dir, replay.ShardManifestFile))
	sig, _ := os.ReadFile(filepath.Join(dir, replay.ShardSignatureFile))
	material, err := os.ReadFile(filepath.Join(dir, replay.ShardMaterialFile))
	if err != nil {
		t.Fatal(err)
	}
	v := &ShardVerifier{Keyless: ca.Verifiers()}
	if err := v.VerifyShard(m, sig, material); err != nil {
		t.Fatal(err)
	}
	wantShardSig(t, v.VerifyShard(m, sig, nil), MissingFile)
	wantShardSig(t, (&ShardVerifier{Keys: storeWith(t, k)}).VerifyShard(m, sig, material), UnknownKey)
	if err := (&ShardVerifier{Keyless: sigtest.NewCA(0xcb).Verifiers()}).VerifyShard(m, sig, material); err == nil {
		t.Fatal("another CA's verifiers accepted the shard")
	}
	res, err := shard.Merge(context.Background(), sr.state, sr.id, sr.dirs, shard.MergeOptions{Verifier: v})
	if err != nil || res.Checks != 4 {
		t.Fatalf("keyless merge: %v %+v", err, res)
	}
}
