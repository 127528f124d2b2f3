package bundle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/shard"
)

// shardWorkflow is the job_workflow_ref the keyless shard tests pin.
const shardWorkflow = "acme/widget/.github/workflows/proofgate.yml@refs/heads/main"

// signShardKeyless replaces dir's key signature with a keyless one by the
// real Fulcio and TSA for a token with claims c.
func signShardKeyless(t *testing.T, svc *sigstoretest.Services, dir string, c githubtest.Claims) {
	t.Helper()
	p := filepath.Join(dir, replay.ShardSignatureFile)
	os.Chmod(p, 0o644)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	s, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: svc.FulcioURL, TSAURL: svc.TSAURL,
		IDToken: svc.OIDC.Token(c), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := SignShardWith(context.Background(), dir, s); err != nil {
		t.Fatalf("keyless shard signing: %v\nfulcio log:\n%s", err, svc.FulcioLog())
	}
}

// shardFiles reads dir's manifest, signature and material.
func shardFiles(t *testing.T, dir string) (m, sig, material []byte) {
	t.Helper()
	var err error
	if m, err = os.ReadFile(filepath.Join(dir, replay.ShardManifestFile)); err != nil {
		t.Fatal(err)
	}
	if sig, err = os.ReadFile(filepath.Join(dir, replay.ShardSignatureFile)); err != nil {
		t.Fatal(err)
	}
	if material, err = os.ReadFile(filepath.Join(dir, replay.ShardMaterialFile)); err != nil {
		t.Fatal(err)
	}
	return m, sig, material
}

// TestKeylessShardRealSigstore signs shards keyless with the real Fulcio
// and timestamp authority (internal/sigstoretest) and verifies them with
// bundle/sigstore's Verifiers (sigstore-go's whole verification) pinned to
// the issuer, the workflow and the repository: accepted and merged;
// refused for a shard signed by another workflow (identity-mismatch, the
// merge: untrusted), a pin to another issuer (identity-mismatch), another
// shard's manifest (subject-mismatch) and a missing material
// (missing-file).
func TestKeylessShardRealSigstore(t *testing.T) {
	svc := sigstoretest.Start(t)
	sr := planShards(t, 4)
	sr.execShards(t, 2, newKey(t))
	own := githubtest.Claims{Repository: "acme/widget", JobWorkflowRef: shardWorkflow}
	for _, d := range sr.dirs {
		signShardKeyless(t, svc, d, own)
	}
	pin := sigstore.Identity{Name: "pin", Issuer: svc.OIDC.URL, SignerWorkflow: shardWorkflow, SourceRepo: "acme/widget"}
	kv, err := sigstore.NewVerifiers(svc.TrustedRoot, []sigstore.Identity{pin})
	if err != nil {
		t.Fatal(err)
	}
	v := &ShardVerifier{Keyless: kv}
	m, sig, material := shardFiles(t, sr.dirs[0])
	if err := v.VerifyShard(m, sig, material); err != nil {
		t.Fatalf("a keyless shard of the pinned workflow is refused: %v", err)
	}
	wantShardSig(t, v.VerifyShard(m, sig, nil), MissingFile)
	m2, _, _ := shardFiles(t, sr.dirs[1])
	wantShardSig(t, v.VerifyShard(m2, sig, material), SubjectMismatch)
	otherIssuer := pin
	otherIssuer.Issuer = "https://token.actions.githubusercontent.com"
	ov, err := sigstore.NewVerifiers(svc.TrustedRoot, []sigstore.Identity{otherIssuer})
	if err != nil {
		t.Fatal(err)
	}
	wantShardSig(t, (&ShardVerifier{Keyless: ov}).VerifyShard(m, sig, material), IdentityMismatch)

	// Shard 2 re-signed by another workflow of the same repository.
	alien := t.TempDir()
	if err := os.CopyFS(alien, os.DirFS(sr.dirs[1])); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(alien, replay.ShardMaterialFile), 0o644)
	os.Remove(filepath.Join(alien, replay.ShardMaterialFile))
	other := own
	other.JobWorkflowRef = "acme/widget/.github/workflows/other.yml@refs/heads/main"
	signShardKeyless(t, svc, alien, other)
	am, asig, amat := shardFiles(t, alien)
	wantShardSig(t, v.VerifyShard(am, asig, amat), IdentityMismatch)
	_, err = shard.Merge(context.Background(), sr.state, sr.id, []string{sr.dirs[0], alien}, shard.MergeOptions{Verifier: v})
	var me *shard.MergeError
	if !errors.As(err, &me) || me.Reason != shard.Untrusted || me.Dir != alien {
		t.Fatalf("merge with the other workflow's shard: %v, want untrusted naming %s", err, alien)
	}

	res, err := shard.Merge(context.Background(), sr.state, sr.id, sr.dirs, shard.MergeOptions{Verifier: v})
	if err != nil || res.Checks != 4 || res.Shards != 2 {
		t.Fatalf("keyless merge: %v %+v", err, res)
	}
}
