package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

// TestShardKeylessCLI walks keyless shards through the CLI against the
// real Fulcio and timestamp authority: `exec --shard I/N --keyless` for a
// token of the pinned workflow, `merge --trusted-root` pinned to the
// issuer and the workflow. Refused first, the run untouched: a shard
// signed keyless by another workflow of the same repository (untrusted,
// identity-mismatch), the same shards against a key trust store only
// (untrusted, unknown-key), a trusted root without an identity pin (usage).
// Then the shards merge, and the merged run's bundle (carrying each
// shard's shard.sigstore.json) verifies.
func TestShardKeylessCLI(t *testing.T) {
	svc := sigstoretest.Start(t)
	p := pg{t: t, dir: t.TempDir()}
	p.write(".proofgate/contract.yaml", shardContract(6))
	p.write(".gitignore", ".proofgate/runs/\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	k := t.TempDir()
	const wf = "acme/widget/.github/workflows/proofgate.yml@refs/heads/main"
	token := func(name, workflow string) string {
		f := filepath.Join(k, name)
		if err := os.WriteFile(f, []byte(svc.OIDC.Token(githubtest.Claims{Repository: "acme/widget", JobWorkflowRef: workflow})), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	own, other := token("own.jwt", wf), token("other.jwt", "acme/widget/.github/workflows/other.yml@refs/heads/main")
	p.must([]int{0}, "plan")
	id := p.runs()[0]
	work := t.TempDir()
	execShard := func(name string, i int, tok string) string {
		state := filepath.Join(work, "state-"+name)
		copyRunDir(t, filepath.Join(p.dir, ".proofgate", "runs", id), filepath.Join(state, "runs", id))
		out := filepath.Join(work, name)
		p.must([]int{0}, "exec", id, "--state", state, "--shard", fmt.Sprintf("%d/2", i), "--out", out, "--keyless",
			"--fulcio-url", svc.FulcioURL, "--tsa-url", svc.TSAURL, "--id-token-file", tok, "-q")
		if _, err := os.Stat(filepath.Join(out, "shard.sigstore.json")); err != nil {
			t.Fatalf("shard %s: no shard.sigstore.json: %v", name, err)
		}
		return out
	}
	one, two, alien := execShard("1", 1, own), execShard("2", 2, own), execShard("alien", 2, other)
	pin := []string{"--trusted-root", svc.TrustedRootPath, "--certificate-oidc-issuer", svc.OIDC.URL, "--signer-workflow", wf}

	r := p.must([]int{1}, append([]string{"merge", id, one, alien}, pin...)...)
	wantOut(t, r.stderr, "untrusted")
	wantOut(t, r.stderr, "identity-mismatch")
	wantOut(t, r.stderr, alien)
	key, trust := filepath.Join(k, "key.pem"), filepath.Join(k, "trust.json")
	p.must([]int{0}, "keygen", "-o", key)
	p.must([]int{0}, "trust", "add", "--store", trust, "--public-key", filepath.Join(k, "key.pub.pem"))
	r = p.must([]int{1}, "merge", id, one, two, "--trust", trust)
	wantOut(t, r.stderr, "untrusted")
	wantOut(t, r.stderr, "unknown-key")
	p.must([]int{2}, "merge", id, one, two, "--trusted-root", svc.TrustedRootPath)

	r = p.must([]int{3}, append([]string{"merge", id, two, one, "--json"}, pin...)...)
	var rep struct {
		State  string            `json:"state"`
		Checks []json.RawMessage `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.State != "AWAITING_APPROVAL" || len(rep.Checks) != 6 {
		t.Fatalf("keyless merge: %v %s %d checks\n%s", err, rep.State, len(rep.Checks), r.stdout)
	}
	p.must([]int{0}, "approve", id, "--actor", "alice")
	b := filepath.Join(k, "b.tgz")
	p.must([]int{0}, "bundle", "export", id, "--key", key, "-o", b)
	r = p.must([]int{0}, "bundle", "verify", b, "--trust", trust, "--any-source", "--contract", ".proofgate/contract.yaml", "--require-approvals", "1")
	wantOut(t, r.stdout, "accepted")
}
