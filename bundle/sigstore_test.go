package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/keytest"
)

// sigstoreVerify verifies a Sigstore bundle with sigstore-go against one
// trusted public key named id (key mode: no tlog, no timestamps), holding
// it to contain a subject with digest sha256:artifact.
func sigstoreVerify(t *testing.T, b []byte, id string, pub ed25519.PublicKey, artifact []byte) (*verify.VerificationResult, error) {
	t.Helper()
	var sb sgbundle.Bundle
	if err := sb.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	v, err := signature.LoadED25519Verifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	tm := root.NewTrustedPublicKeyMaterialFromMapping(map[string]*root.ExpiringKey{
		id: root.NewExpiringKey(v, time.Time{}, time.Time{}),
	})
	sv, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		t.Fatal(err)
	}
	return sv.Verify(&sb, verify.NewPolicy(verify.WithArtifactDigest("sha256", artifact), verify.WithKey()))
}

// sigstoreFixture exports a real run and builds its Sigstore bundle.
func sigstoreFixture(t *testing.T) (k *signingKey, archiveEnv, sb []byte, runJSON [32]byte) {
	t.Helper()
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k = newKey(t)
	var buf bytes.Buffer
	res, err := Export(f.runDir, k.s, &buf, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range files(t, buf.Bytes()) {
		switch fl.Name {
		case AttestationFile:
			archiveEnv = fl.Data
		case "run.json":
			runJSON = sha256.Sum256(fl.Data)
		}
	}
	if !bytes.Equal(archiveEnv, res.Envelope) {
		t.Fatal("ExportResult.Envelope differs from the archive's attestation.dsse.json")
	}
	sb, err = sigstore.FromEnvelope(res.Envelope, res.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	return k, archiveEnv, sb, runJSON
}

func TestSigstoreBundleVerifiesWithSigstoreGo(t *testing.T) {
	k, archiveEnv, sb, runJSON := sigstoreFixture(t)
	res, err := sigstoreVerify(t, sb, k.s.KeyID(), k.s.Public, runJSON[:])
	if err != nil {
		t.Fatalf("sigstore-go refused the bundle: %v\n%s", err, sb)
	}
	st := res.Statement
	if st == nil || st.GetPredicateType() != PredicateType || st.GetType() != StatementType {
		t.Fatalf("statement = %v", st)
	}
	var ours Statement
	if _, payload, err := envelope.Parse(archiveEnv, PayloadType, AttestationFile); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(payload, &ours); err != nil {
		t.Fatal(err)
	}
	if len(st.GetSubject()) != len(ours.Subject) || len(ours.Subject) == 0 {
		t.Fatalf("subjects: sigstore-go %d, archive %d", len(st.GetSubject()), len(ours.Subject))
	}
	for i, s := range st.GetSubject() {
		if s.GetName() != ours.Subject[i].Name || s.GetDigest()["sha256"] != ours.Subject[i].Digest["sha256"] {
			t.Errorf("subject %d: %s %v, want %s %v", i, s.GetName(), s.GetDigest(), ours.Subject[i].Name, ours.Subject[i].Digest)
		}
	}
	if res.Signature == nil || res.Signature.PublicKeyID == nil || string(*res.Signature.PublicKeyID) != k.s.KeyID() {
		t.Errorf("signature key id = %+v, want %s", res.Signature, k.s.KeyID())
	}
	rb, err := sigstore.Read(sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.SameEnvelope(archiveEnv); err != nil {
		t.Fatal(err)
	}
	again, err := sigstore.FromEnvelope(archiveEnv, k.s.KeyID())
	if err != nil || !bytes.Equal(again, sb) {
		t.Fatalf("not deterministic (err %v)", err)
	}
}

func TestSigstoreBundleHostile(t *testing.T) {
	k, archiveEnv, sb, runJSON := sigstoreFixture(t)
	rb, err := sigstore.Read(sb)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("payload byte flipped", func(t *testing.T) {
		rb := *rb
		rb.Payload = bytes.Clone(rb.Payload)
		i := bytes.Index(rb.Payload, []byte(`"run.json"`))
		if i < 0 {
			t.Fatal("no run.json subject in the payload")
		}
		rb.Payload[i+1] ^= 0x20 // "RUN.json": still valid JSON, another statement
		tampered := rebuild(t, &rb)
		if _, err := sigstoreVerify(t, tampered, k.s.KeyID(), k.s.Public, runJSON[:]); err == nil {
			t.Fatal("sigstore-go accepted a bundle whose payload differs from the signed one")
		}
		tr, err := sigstore.Read(tampered)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.SameEnvelope(archiveEnv); err == nil || !strings.Contains(err.Error(), "payload differs") {
			t.Fatalf("SameEnvelope = %v, want payload differs", err)
		}
	})
	t.Run("wrong public key", func(t *testing.T) {
		other := keytest.New(t)
		if _, err := sigstoreVerify(t, sb, k.s.KeyID(), other.Signer.Public, runJSON[:]); err == nil {
			t.Fatal("sigstore-go accepted the bundle under another key")
		}
	})
	t.Run("unknown hint", func(t *testing.T) {
		if _, err := sigstoreVerify(t, sb, "not-the-key-id", k.s.Public, runJSON[:]); err == nil {
			t.Fatal("sigstore-go accepted a bundle whose hint names no trusted key")
		}
	})
	t.Run("artifact not a subject", func(t *testing.T) {
		d := sha256.Sum256([]byte("some other file"))
		if _, err := sigstoreVerify(t, sb, k.s.KeyID(), k.s.Public, d[:]); err == nil {
			t.Fatal("sigstore-go accepted an artifact that is no subject")
		}
	})
}

// rebuild writes a Sigstore bundle from (possibly tampered) parts.
func rebuild(t *testing.T, b *sigstore.Bundle) []byte {
	t.Helper()
	env, err := json.Marshal(map[string]any{"payloadType": b.PayloadType, "payload": b.Payload,
		"signatures": []map[string]any{{"sig": b.Sig}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := sigstore.FromEnvelope(env, b.Hint)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
