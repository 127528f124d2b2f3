//go:build unix

package vsa_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

const gateWorkflow = "acme/deploy/.github/workflows/gate.yml"

// keylessSigner is a keyless signer for a token of the gate workflow at
// ref, from the real Fulcio and timestamp authority svc runs.
func keylessSigner(t *testing.T, svc *sigstoretest.Services, workflow string) *sigstore.KeylessSigner {
	t.Helper()
	tok := svc.OIDC.Token(githubtest.Claims{Repository: "acme/deploy", JobWorkflowRef: workflow + "@refs/heads/main"})
	s, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: svc.FulcioURL, TSAURL: svc.TSAURL, IDToken: tok})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pinned are material verifiers for svc's trusted root, pinned to workflow.
func pinned(t *testing.T, svc *sigstoretest.Services, workflow string) *sigstore.Verifiers {
	t.Helper()
	v, err := sigstore.NewVerifiers(svc.TrustedRoot, []sigstore.Identity{{Name: "test", Issuer: svc.OIDC.URL, SignerWorkflow: workflow}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKeylessSummary: a summary signed keyless (a Fulcio certificate for
// the gate's workflow and an RFC 3161 timestamp, real services on
// 127.0.0.1) is a Sigstore bundle whose envelope carries the statement;
// OpenKeyless accepts it for the pinned gate workflow with its policy
// document, and refuses another workflow's pin, a changed statement, a
// statement re-signed by another gate, a timeVerified outside the signing
// window of the witnessed time, and the key-mode form.
func TestKeylessSummary(t *testing.T) {
	svc := sigstoretest.Start(t)
	m := bundleFixture(t)
	st, doc := summarizeDoc(t, m, m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash})
	now := time.Now().UTC()
	st.Predicate.TimeVerified = now.Format(time.RFC3339Nano)
	ctx := context.Background()
	b, err := vsa.SignKeyless(ctx, keylessSigner(t, svc, gateWorkflow), st)
	if err != nil {
		t.Fatal(err)
	}
	var sb struct {
		MediaType    string `json:"mediaType"`
		DSSEEnvelope struct {
			Payload string `json:"payload"`
		} `json:"dsseEnvelope"`
	}
	if err := json.Unmarshal(b, &sb); err != nil || !strings.HasPrefix(sb.MediaType, "application/vnd.dev.sigstore.bundle") {
		t.Fatalf("not a Sigstore bundle (%v): %.200s", err, b)
	}
	payload, _ := base64.StdEncoding.DecodeString(sb.DSSEEnvelope.Payload)
	good, _ := canon.Marshal(st)
	if !bytes.Equal(payload, good) {
		t.Fatalf("the bundle's envelope carries %s, want the statement", payload)
	}
	got, k, err := vsa.OpenKeyless(b, pinned(t, svc, gateWorkflow), doc)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Passed() || got.Policy() == nil || got.Policy().Bundle.Commit != m.commit || !strings.HasSuffix(k.Signer(), gateWorkflow+"@refs/heads/main") {
		t.Fatalf("OpenKeyless = %+v, signer %s", got, k.Signer())
	}
	checkInToto(t, payload, sum(m.archive), now)

	t.Run("another-workflow-pinned", func(t *testing.T) {
		_, _, err := vsa.OpenKeyless(b, pinned(t, svc, "acme/deploy/.github/workflows/other.yml"), nil)
		wantReason(t, err, vsa.Reason(sigstore.IdentityMismatch))
	})
	t.Run("statement-changed", func(t *testing.T) {
		forged := bytes.Replace(b, []byte(sb.DSSEEnvelope.Payload),
			[]byte(base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte(`"PASSED"`), []byte(`"FAILED"`), 1))), 1)
		_, _, err := vsa.OpenKeyless(forged, pinned(t, svc, gateWorkflow), nil)
		if r := reasonOf(err); r != vsa.Reason(sigstore.SignatureInvalid) && r != vsa.Reason(sigstore.MaterialMismatch) {
			t.Fatalf("got %v, want signature-invalid", err)
		}
	})
	t.Run("another-gate", func(t *testing.T) {
		other, err := vsa.SignKeyless(ctx, keylessSigner(t, svc, "acme/deploy/.github/workflows/other.yml"), st)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = vsa.OpenKeyless(other, pinned(t, svc, gateWorkflow), nil)
		wantReason(t, err, vsa.Reason(sigstore.IdentityMismatch))
	})
	t.Run("time-verified-outside-window", func(t *testing.T) {
		for _, at := range []time.Time{time.Now().Add(-time.Hour), time.Now().Add(-11 * time.Minute), time.Now().Add(6 * time.Minute)} {
			c := *st
			c.Predicate.TimeVerified = at.UTC().Format(time.RFC3339Nano)
			bb, err := vsa.SignKeyless(ctx, keylessSigner(t, svc, gateWorkflow), &c)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = vsa.OpenKeyless(bb, pinned(t, svc, gateWorkflow), nil)
			wantReason(t, err, vsa.SigningTimeImplausible)
		}
	})
	t.Run("policy-document-of-another", func(t *testing.T) {
		_, other := summarizeDoc(t, m, m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, RequireApprovals: 2})
		_, _, err := vsa.OpenKeyless(b, pinned(t, svc, gateWorkflow), other)
		wantReason(t, err, vsa.PolicyMismatch)
	})
	t.Run("forms-are-not-mixed", func(t *testing.T) {
		gate := keytest.New(t)
		keyed, err := vsa.Sign(ctx, gate.Signer, st)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = vsa.OpenKeyless(keyed, pinned(t, svc, gateWorkflow), nil)
		wantReason(t, err, vsa.Malformed)
		_, _, err = vsa.Open(b, storeOf(t, gate), nil)
		wantReason(t, err, vsa.Malformed)
		_, _, err = vsa.OpenKeyless(append(b, bytes.Repeat([]byte(" "), 16<<20)...), pinned(t, svc, gateWorkflow), nil)
		wantReason(t, err, vsa.Malformed)
	})
}
