//go:build unix

package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/kernel/replay"
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

// TestKeylessShardStatementRefusals: what a keyless shard.sig must sign,
// with the test CA (bundle/internal/sigtest): an in-toto statement (a
// keyless envelope of the raw manifest is malformed, and so is a key
// signature of a statement), of the shard predicate type (a bundle's
// predicate type is malformed), over this shard.json (another subject
// digest or predicate: subject-mismatch), witnessed near the manifest's
// finished time (signing-time-implausible).
func TestKeylessShardStatementRefusals(t *testing.T) {
	sr := planShards(t, 2)
	k := newKey(t)
	sr.execShards(t, 1, k)
	m, err := os.ReadFile(filepath.Join(sr.dirs[0], replay.ShardManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	finished, err := shardFinished(m)
	if err != nil {
		t.Fatal(err)
	}
	ca := sigtest.NewCA(0xca)
	v := &ShardVerifier{Keyless: ca.Verifiers(), Keys: storeWith(t, k)}
	sign := func(w time.Time, typ string, payload []byte) ([]byte, []byte) {
		env, mat, err := envelope.SignWithMaterial(context.Background(), ca.NewKeylessSigner(2, w), typ, payload)
		if err != nil {
			t.Fatal(err)
		}
		return env, mat
	}
	st, err := shardStatement(m)
	if err != nil {
		t.Fatal(err)
	}
	if env, mat := sign(finished, PayloadType, st); v.VerifyShard(m, env, mat) != nil {
		t.Fatalf("the statement is refused: %v", v.VerifyShard(m, env, mat))
	}
	env, mat := sign(finished, ShardPayloadType, m)
	wantShardSig(t, v.VerifyShard(m, env, mat), Malformed)
	keyEnv, err := envelope.Sign(k.s, PayloadType, st)
	if err != nil {
		t.Fatal(err)
	}
	wantShardSig(t, v.VerifyShard(m, keyEnv, nil), Malformed)
	for _, edit := range []func(*ShardStatement){
		func(s *ShardStatement) { s.PredicateType = PredicateType },
		func(s *ShardStatement) { s.Type = "https://in-toto.io/Statement/v0.1" },
	} {
		var s ShardStatement
		if err := json.Unmarshal(st, &s); err != nil {
			t.Fatal(err)
		}
		edit(&s)
		b, _ := canon.Marshal(&s)
		env, mat := sign(finished, PayloadType, b)
		wantShardSig(t, v.VerifyShard(m, env, mat), Malformed)
	}
	for name, edit := range map[string]func(*ShardStatement){
		"another digest":            func(s *ShardStatement) { s.Subject[0].Digest["sha256"] = sum([]byte("other")) },
		"another name":              func(s *ShardStatement) { s.Subject[0].Name = "events.ndjson" },
		"two subjects":              func(s *ShardStatement) { s.Subject = append(s.Subject, s.Subject[0]) },
		"another shard":             func(s *ShardStatement) { s.Predicate.Shard = 2; s.Predicate.Of = 2 },
		"another run":               func(s *ShardStatement) { s.Predicate.Run = "r-other" },
		"a non-canonical statement": nil,
	} {
		b := append(bytes.Clone(st), ' ')
		if edit != nil {
			var s ShardStatement
			if err := json.Unmarshal(st, &s); err != nil {
				t.Fatal(err)
			}
			edit(&s)
			b, _ = canon.Marshal(&s)
		}
		env, mat := sign(finished, PayloadType, b)
		var se *ShardSignatureError
		if err := v.VerifyShard(m, env, mat); !errors.As(err, &se) || se.Reason != SubjectMismatch {
			t.Fatalf("%s: %v, want %s", name, err, SubjectMismatch)
		}
	}
	env, mat = sign(finished.Add(MaxKeylessSigningDelay+time.Second), PayloadType, st)
	wantShardSig(t, v.VerifyShard(m, env, mat), SigningTimeImplausible)
	env, mat = sign(finished.Add(-MaxClockSkew-time.Second), PayloadType, st)
	wantShardSig(t, v.VerifyShard(m, env, mat), SigningTimeImplausible)
	env, mat = sign(time.Time{}, PayloadType, st)
	wantShardSig(t, v.VerifyShard(m, env, mat), TimestampInvalid)
}
