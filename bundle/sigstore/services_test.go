package sigstore_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

// realReusable is the job_workflow_ref a token of the trusted reusable
// workflow carries; realCaller is a caller repository's own workflow.
const (
	realReusable = "proofgate-org/proofgate/.github/workflows/proofgate.yml@refs/tags/v1"
	realCaller   = "octo-org/octo-repo/.github/workflows/ci.yml@refs/pull/7/merge"
)

// TestKeylessAgainstRealServices signs with the real Fulcio (ephemeral
// CA) and timestamp authority on 127.0.0.1, for a token of the fake
// GitHub issuer, and verifies the material against the trusted root the
// services publish, pinned to the reusable workflow: accepted for the
// reusable workflow's token, refused (identity-mismatch) for a caller
// workflow's token and for a pin to another ref, and refused
// (timestamp-invalid or certificate-invalid) against another instance's root.
func TestKeylessAgainstRealServices(t *testing.T) {
	svc := sigstoretest.Start(t)
	pin := sigstore.Identity{Name: "test", Issuer: svc.OIDC.URL,
		SignerWorkflow: "proofgate-org/proofgate/.github/workflows/proofgate.yml@refs/tags/v1",
		SourceRepo:     "octo-org/octo-repo"}
	v, err := sigstore.NewVerifiers(svc.TrustedRoot, []sigstore.Identity{pin})
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"_type":"https://in-toto.io/Statement/v1"}`)

	env, mat, took := signReal(t, svc, githubtest.Claims{Repository: "octo-org/octo-repo", JobWorkflowRef: realReusable}, payload)
	t.Logf("keyless sign (Fulcio + TSA, real services): %d ms", took.Milliseconds())
	k, err := v.VerifierFor(keyIDFromEnvelope(t, env), env, mat)
	if err != nil {
		t.Fatalf("the reusable workflow's bundle is refused: %v", err)
	}
	if !k.Verify(envelope.PAE("application/vnd.in-toto+json", payload), sigFromEnvelope(t, env)) {
		t.Fatal("the certificate key does not verify the signature")
	}
	if w := k.WitnessedAt(); time.Since(w) > time.Minute || time.Until(w) > time.Minute {
		t.Errorf("witnessed at %v, not now", w)
	}
	if err := k.CheckAt(k.WitnessedAt(), "repo:octo-org/octo-repo"); err != nil {
		t.Errorf("CheckAt for the source repository: %v", err)
	}
	wantReason(t, k.CheckAt(k.WitnessedAt(), "repo:octo-org/other"), sigstore.IdentityMismatch)

	env2, mat2, _ := signReal(t, svc, githubtest.Claims{Repository: "octo-org/octo-repo", JobWorkflowRef: realCaller}, payload)
	_, err = v.VerifierFor(keyIDFromEnvelope(t, env2), env2, mat2)
	wantReason(t, err, sigstore.IdentityMismatch)

	other := pin
	other.SignerWorkflow = "proofgate-org/proofgate/.github/workflows/proofgate.yml@refs/tags/v2"
	v2, err := sigstore.NewVerifiers(svc.TrustedRoot, []sigstore.Identity{other})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v2.VerifierFor(keyIDFromEnvelope(t, env), env, mat)
	wantReason(t, err, sigstore.IdentityMismatch)

	foreign := sigstoretest.Start(t)
	fv, err := sigstore.NewVerifiers(foreign.TrustedRoot, []sigstore.Identity{pin})
	if err != nil {
		t.Fatal(err)
	}
	_, err = fv.VerifierFor(keyIDFromEnvelope(t, env), env, mat)
	var ve *sigstore.VerifyError
	if !errors.As(err, &ve) || (ve.Reason != sigstore.TimestampInvalid && ve.Reason != sigstore.CertificateInvalid) {
		t.Fatalf("another instance's root: %v, want timestamp-invalid or certificate-invalid", err)
	}
}

// signReal signs payload keyless for a token with claims c and returns
// the archive envelope (keyid set), the material and the signing time.
func signReal(t *testing.T, svc *sigstoretest.Services, c githubtest.Claims, payload []byte) (env, mat []byte, took time.Duration) {
	t.Helper()
	s, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: svc.FulcioURL, TSAURL: svc.TSAURL,
		IDToken: svc.OIDC.Token(c), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	sig, mat, err := s.SignEnvelope(context.Background(), "application/vnd.in-toto+json", payload)
	took = time.Since(began)
	if err != nil {
		t.Fatalf("keyless sign: %v\nfulcio log:\n%s", err, svc.FulcioLog())
	}
	return archiveEnvelope(t, s.KeyID(), payload, sig), mat, took
}

// keyIDFromEnvelope and sigFromEnvelope read the one signature of an
// archive envelope.
func keyIDFromEnvelope(t *testing.T, env []byte) string { return oneSig(t, env).KeyID }

func sigFromEnvelope(t *testing.T, env []byte) []byte {
	b, err := base64.StdEncoding.DecodeString(oneSig(t, env).Sig)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func oneSig(t *testing.T, env []byte) envelope.Signature {
	t.Helper()
	var e envelope.Envelope
	if err := json.Unmarshal(env, &e); err != nil || len(e.Signatures) != 1 {
		t.Fatalf("envelope: %v", err)
	}
	return e.Signatures[0]
}

func wantReason(t *testing.T, err error, r sigstore.Reason) {
	t.Helper()
	var ve *sigstore.VerifyError
	if !errors.As(err, &ve) || ve.Reason != r {
		t.Fatalf("error %v, want reason %s", err, r)
	}
}

// BenchmarkSign compares one key-mode signature (Ed25519, the baseline)
// with one keyless signature against the real Fulcio and timestamp
// authority on 127.0.0.1: an ephemeral key, a certificate, a timestamp.
func BenchmarkSign(b *testing.B) {
	payload := []byte(`{"_type":"https://in-toto.io/Statement/v1"}`)
	b.Run("key", func(b *testing.B) {
		s := keytest.New(b).Signer
		for b.Loop() {
			if _, err := envelope.Sign(s, "application/vnd.in-toto+json", payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("keyless", func(b *testing.B) {
		svc := sigstoretest.Start(b)
		token := svc.OIDC.Token(githubtest.Claims{JobWorkflowRef: realReusable})
		for b.Loop() {
			s, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: svc.FulcioURL, TSAURL: svc.TSAURL, IDToken: token})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.SignEnvelope(context.Background(), "application/vnd.in-toto+json", payload); err != nil {
				b.Fatal(err)
			}
		}
	})
}
