package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// signtimeRepo is a committed repository with a contract of n checks.
func signtimeRepo(t *testing.T, n int) pg {
	p := pg{t: t, dir: t.TempDir()}
	p.write(".proofgate/contract.yaml", shardContract(n))
	p.write(".gitignore", ".proofgate/runs/\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	return p
}

// A shard key revoked an hour ago (trust revoke --at) re-signs a shard
// manifest with finished set before the revocation and before the run was
// planned: merge refuses it, and the run is left PLANNED (nothing to
// export).
func TestMergeRefusesBackdatedShardOfRevokedKey(t *testing.T) {
	p := signtimeRepo(t, 6)
	k := t.TempDir()
	keyPath, trust := filepath.Join(k, "key.pem"), filepath.Join(k, "trust.json")
	p.must([]int{0}, "keygen", "-o", keyPath)
	p.must([]int{0}, "trust", "add", "--store", trust, "--public-key", filepath.Join(k, "key.pub.pem"))
	p.must([]int{0}, "plan")
	id := p.runs()[0]
	work := t.TempDir()
	var dirs []string
	for i := 1; i <= 2; i++ {
		state := filepath.Join(work, fmt.Sprintf("state-%d", i))
		copyRunDir(t, filepath.Join(p.dir, ".proofgate", "runs", id), filepath.Join(state, "runs", id))
		d := filepath.Join(work, fmt.Sprintf("shard-%d", i))
		p.must([]int{0}, "exec", id, "--state", state, "--shard", fmt.Sprintf("%d/2", i), "--out", d, "--key", keyPath, "-q")
		dirs = append(dirs, d)
	}
	revoked := time.Now().Add(-time.Hour)
	s, err := key.Load(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		mp := filepath.Join(d, replay.ShardManifestFile)
		b, _ := os.ReadFile(mp)
		var m replay.ShardManifest
		if err := strictjson.Decode(b, &m); err != nil {
			t.Fatal(err)
		}
		m.Finished = revoked.Add(-time.Hour).UTC().Format(time.RFC3339Nano)
		b, _ = canon.Marshal(&m)
		os.WriteFile(mp, b, 0o644)
		os.Remove(filepath.Join(d, replay.ShardSignatureFile))
		if err := bundle.SignShard(d, s); err != nil {
			t.Fatal(err)
		}
	}
	p.must([]int{0}, "trust", "revoke", "--store", trust, "--key-id", s.KeyID(), "--at", revoked.UTC().Format(time.RFC3339Nano))
	r := p.must([]int{1}, append([]string{"merge", id, "--trust", trust}, dirs...)...)
	wantOut(t, r.stderr, "key-revoked")
	r = p.must([]int{0}, "status", id)
	wantOut(t, r.stdout, "PLANNED")
	p.must([]int{1, 2}, "bundle", "export", id, "--key", keyPath, "-o", filepath.Join(k, "b.tgz"))
}

// A gate key revoked an hour ago re-signs a VSA with timeVerified before
// the revocation, about a bundle signed after it: vsa verify refuses it
// (signing-time-implausible) when given the archive, whose signing time
// the summary's signer does not choose.
func TestVSAVerifyRefusesBackdatedSummary(t *testing.T) {
	p := signtimeRepo(t, 1)
	k := t.TempDir()
	bkey, btrust, gkey, gtrust := filepath.Join(k, "b.pem"), filepath.Join(k, "b.json"), filepath.Join(k, "g.pem"), filepath.Join(k, "g.json")
	archive, summary := filepath.Join(k, "b.tgz"), filepath.Join(k, "out.vsa.json")
	p.must([]int{0}, "keygen", "-o", bkey)
	p.must([]int{0}, "trust", "add", "--store", btrust, "--public-key", filepath.Join(k, "b.pub.pem"))
	p.must([]int{0}, "keygen", "-o", gkey)
	p.must([]int{0}, "trust", "add", "--store", gtrust, "--public-key", filepath.Join(k, "g.pub.pem"))
	p.must([]int{3}, "run")
	id := p.runs()[0]
	p.must([]int{0}, "approve", id, "--actor", "alice")
	p.must([]int{0}, "bundle", "export", id, "--key", bkey, "-o", archive)
	pol := filepath.Join(k, "out.policy.json")
	p.must([]int{0}, "bundle", "verify", archive, "--trust", btrust, "--any-source", "--any-contract", "--vsa", summary, "--vsa-key", gkey, "--vsa-policy", pol)
	r := p.must([]int{1}, "vsa", "verify", summary, "--trust", gtrust, "--subject", archive, "--policy", pol) // the summary itself verifies
	wantOut(t, r.stderr, "unsafe-policy: the bundle passed under the unsafe opt-outs [any-source any-contract]")
	revoked := time.Now().Add(-time.Hour)
	g, err := key.Load(gkey)
	if err != nil {
		t.Fatal(err)
	}
	forge := func(name string) string {
		b, _ := os.ReadFile(summary)
		var signed envelope.Envelope // the gate's: two signature entries (ADR 0038)
		if err := json.Unmarshal(b, &signed); err != nil {
			t.Fatal(err)
		}
		payload, err := base64.StdEncoding.DecodeString(signed.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st vsa.Statement
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		st.Predicate.TimeVerified = revoked.Add(-time.Minute).UTC().Format(time.RFC3339Nano)
		c, _ := canon.Marshal(&st)
		env, err := envelope.Sign(g, vsa.PayloadType, c)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(k, name)
		os.WriteFile(out, env, 0o644)
		return out
	}
	p.must([]int{0}, "trust", "revoke", "--store", gtrust, "--key-id", g.KeyID(), "--at", revoked.UTC().Format(time.RFC3339Nano))
	forged := forge("a.vsa.json")
	r = p.must([]int{1}, "vsa", "verify", forged, "--trust", gtrust, "--allow-unsafe", "--subject", archive)
	wantOut(t, r.stderr, "signing-time-implausible")
	r = p.must([]int{1}, "vsa", "verify", forged, "--trust", gtrust, "--allow-unsafe", "--subject", archive, "--policy", pol)
	wantOut(t, r.stderr, "signing-time-implausible")
}
