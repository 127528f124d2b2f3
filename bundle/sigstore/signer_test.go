package sigstore_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
)

// fakeToken is an unsigned JWT-shaped token: sigstore-go reads its
// subject for the proof of possession; the fake Fulcio checks both.
func fakeToken(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]string{"sub": sub, "iss": sigstore.DefaultIssuer, "aud": "sigstore"})
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + ".sig"
}

// fulcio is a fake Fulcio on 127.0.0.1 speaking the v2 signingCert API:
// it checks the bearer token and the proof of possession, then issues a
// leaf from the world's CA for the posted key (or, if swap, for another).
type fulcio struct {
	srv   *httptest.Server
	calls atomic.Int32
}

func newFulcio(t *testing.T, w *world, token, sub string, swap bool) *fulcio {
	f := &fulcio{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/api/v2/signingCert" || r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req struct {
			PublicKeyRequest struct {
				PublicKey struct {
					Algorithm string `json:"algorithm"`
					Content   string `json:"content"`
				} `json:"publicKey"`
				ProofOfPossession string `json:"proofOfPossession"`
			} `json:"publicKeyRequest"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if json.Unmarshal(body, &req) != nil {
			http.Error(rw, "bad request", http.StatusBadRequest)
			return
		}
		block, _ := pem.Decode([]byte(req.PublicKeyRequest.PublicKey.Content))
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		pop, _ := base64.StdEncoding.DecodeString(req.PublicKeyRequest.ProofOfPossession)
		h := sha256.Sum256([]byte(sub))
		ek, ok := pub.(*ecdsa.PublicKey)
		if err != nil || !ok || req.PublicKeyRequest.PublicKey.Algorithm != "ECDSA" || !ecdsa.VerifyASN1(ek, h[:], pop) {
			http.Error(rw, "no proof of possession", http.StatusBadRequest)
			return
		}
		if swap {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			ek = &k.PublicKey
		}
		leaf := w.fulcio.issue(t, ek, defaultClaims())
		pemOf := func(c *x509.Certificate) string {
			return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
		}
		resp := map[string]any{"signedCertificateEmbeddedSct": map[string]any{"chain": map[string]any{
			"certificates": []string{pemOf(leaf), pemOf(w.fulcio.inter)}}}}
		_ = json.NewEncoder(rw).Encode(resp)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// newTSA is a fake RFC 3161 timestamp authority on 127.0.0.1.
func newTSA(t *testing.T, w *world) (string, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		req, err := timestamp.ParseRequest(body)
		if err != nil || r.Header.Get("Content-Type") != "application/timestamp-query" {
			http.Error(rw, "bad request", http.StatusBadRequest)
			return
		}
		rw.Header().Set("Content-Type", "application/timestamp-reply")
		_, _ = rw.Write(w.respond(t, req, time.Now()))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/timestamp", &calls
}

// TestKeylessSignerRoundTrip: KeylessSigner, through sigstore-go's
// signing API against fake Fulcio and TSA servers, makes material that
// the verifier accepts for the envelope it signed; the material is
// Marshal's deterministic form and carries no keyid.
func TestKeylessSignerRoundTrip(t *testing.T) {
	w := newWorld(t)
	const sub = "repo:octo/app:ref:refs/heads/main"
	tok := fakeToken(sub)
	f := newFulcio(t, w, tok, sub, false)
	tsaURL, tsaCalls := newTSA(t, w)
	s, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: f.srv.URL, TSAURL: tsaURL, IDToken: tok, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.KeyID(), envelope.KeylessPrefix) || len(s.KeyID()) != len(envelope.KeylessPrefix)+64 {
		t.Fatalf("key id %q", s.KeyID())
	}
	sig, mat, err := s.SignEnvelope(context.Background(), payloadType, testPayload)
	if err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() != 1 || tsaCalls.Load() != 1 {
		t.Fatalf("fulcio %d, tsa %d calls", f.calls.Load(), tsaCalls.Load())
	}
	if len(sig) > envelope.MaxMaterialSignature || bytes.Contains(mat, []byte("keyid")) || !bytes.HasSuffix(mat, []byte("}\n")) {
		t.Fatalf("signature of %d bytes, material:\n%s", len(sig), mat)
	}
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(mat, &pb); err != nil {
		t.Fatal(err)
	}
	if again, err := sigstore.Marshal(&pb); err != nil || !bytes.Equal(again, mat) {
		t.Fatalf("the material is not Marshal's form: %v", err)
	}
	env := archiveEnvelope(t, s.KeyID(), testPayload, sig)
	k, err := verifiers(t, w).VerifierFor(s.KeyID(), env, mat)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Verify(envelope.PAE(payloadType, testPayload), sig) {
		t.Fatal("the witnessed key does not verify the signature")
	}
	if d := time.Since(k.WitnessedAt()); d < 0 || d > time.Minute {
		t.Fatalf("witnessed %s ago", d)
	}
	// sigstore-go alone, as a third party would, verifies the material
	// with the identity pinned.
	tr, err := root.NewTrustedRootFromJSON(w.trustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	var sb sgbundle.Bundle
	if err := sb.UnmarshalJSON(mat); err != nil {
		t.Fatal(err)
	}
	sv, err := verify.NewVerifier(tr, verify.WithSignedTimestamps(1))
	if err != nil {
		t.Fatal(err)
	}
	cid, err := verify.NewShortCertificateIdentity(sigstore.DefaultIssuer, "", "https://github.com/"+reusable, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sv.Verify(&sb, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithCertificateIdentity(cid))); err != nil {
		t.Fatalf("sigstore-go: %v", err)
	}
	// The ephemeral key signs once.
	if _, _, err := s.SignEnvelope(context.Background(), payloadType, testPayload); err == nil {
		t.Fatal("a second signature with the ephemeral key")
	}
}

func TestKeylessSignerRefuses(t *testing.T) {
	w := newWorld(t)
	const sub = "repo:octo/app:ref:refs/heads/main"
	tok := fakeToken(sub)
	tsaURL, _ := newTSA(t, w)
	sign := func(fulcioURL, token string) error {
		s, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: fulcioURL, TSAURL: tsaURL, IDToken: token, Timeout: 5 * time.Second})
		if err != nil {
			return err
		}
		_, _, err = s.SignEnvelope(context.Background(), payloadType, testPayload)
		return err
	}
	// A certificate for another key than the ephemeral one.
	swapped := newFulcio(t, w, tok, sub, true)
	if err := sign(swapped.srv.URL, tok); err == nil || !strings.Contains(err.Error(), "not for the ephemeral key") {
		t.Fatalf("swapped certificate: %v", err)
	}
	// Fulcio refuses the token.
	f := newFulcio(t, w, tok, sub, false)
	if err := sign(f.srv.URL, fakeToken("repo:evil/app")); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("refused token: %v", err)
	}
	if _, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: f.srv.URL}); err == nil {
		t.Fatal("a signer without a token")
	}
	if _, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{FulcioURL: f.srv.URL, IDToken: tok, NoTSA: true}); err == nil || !strings.Contains(err.Error(), "witness") {
		t.Fatalf("a signer without a witness: %v", err)
	}
}
