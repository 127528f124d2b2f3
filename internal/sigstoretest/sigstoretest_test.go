package sigstoretest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/sethvargo/go-githubactions"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

const (
	payloadType = "application/vnd.in-toto+json"
	repo        = "octo-org/octo-repo"
	signerWF    = "octo-org/octo-ci/.github/workflows/sign.yml@refs/heads/main"
)

var payload = []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"a","digest":{"sha256":"` +
	strings.Repeat("ab", 32) + `"}}],"predicateType":"https://example.com/p","predicate":{}}`)

// keyless signs payload as a DSSE envelope with sigstore-go's sign API:
// an ephemeral key, a Fulcio certificate for tok, an RFC 3161 timestamp.
func keyless(s *Services, tok string) (*protobundle.Bundle, error) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, err
	}
	return sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: payloadType}, kp, sign.BundleOptions{
		CertificateProvider:        sign.NewFulcio(&sign.FulcioOptions{BaseURL: s.FulcioURL, Timeout: 20 * time.Second}),
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: tok},
		TimestampAuthorities:       []*sign.TimestampAuthority{sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{URL: s.TSAURL, Timeout: 20 * time.Second})},
		Context:                    context.Background(),
	})
}

// verifyFor verifies b against trustedRoot with a policy pinning the
// issuer and the signer workflow (SAN = https://github.com/<workflow ref>).
func verifyFor(t *testing.T, trustedRoot []byte, b *protobundle.Bundle, issuer, workflow string) (*verify.VerificationResult, error) {
	t.Helper()
	tr, err := root.NewTrustedRootFromJSON(trustedRoot)
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.NewVerifier(tr, verify.WithSignedTimestamps(1))
	if err != nil {
		t.Fatal(err)
	}
	id, err := verify.NewShortCertificateIdentity(issuer, "", "https://github.com/"+workflow, "")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := bundle.NewBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	return v.Verify(sb, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithCertificateIdentity(id)))
}

// TestKeylessSignVerify: the real Fulcio issues a certificate for a token
// of the issuer it trusts, the real TSA timestamps the signature, and
// sigstore-go verifies the bundle against TrustedRoot for the job's
// workflow, and refuses it for another workflow or issuer.
func TestKeylessSignVerify(t *testing.T) {
	s := Start(t)
	tok := s.OIDC.Token(githubtest.Claims{Repository: repo, JobWorkflowRef: signerWF})
	began := time.Now()
	b, err := keyless(s, tok)
	if err != nil {
		t.Fatalf("keyless sign: %v", err)
	}
	t.Logf("keyless sign (Fulcio + TSA): %d ms", time.Since(began).Milliseconds())

	res, err := verifyFor(t, s.TrustedRoot, b, s.OIDC.URL, signerWF)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !bytes.Equal(b.GetDsseEnvelope().GetPayload(), payload) || b.GetDsseEnvelope().GetPayloadType() != payloadType {
		t.Error("bundle does not carry the signed payload")
	}
	ext := res.Signature.Certificate
	if ext.SourceRepositoryURI != "https://github.com/"+repo || ext.BuildSignerURI != "https://github.com/"+signerWF ||
		ext.SourceRepositoryRef != "refs/heads/main" || ext.Issuer != s.OIDC.URL || ext.RunnerEnvironment != "github-hosted" {
		t.Errorf("certificate extensions %+v", ext)
	}
	if len(res.VerifiedTimestamps) != 1 || res.VerifiedTimestamps[0].Type != "TimestampAuthority" {
		t.Errorf("verified timestamps %+v", res.VerifiedTimestamps)
	}
	if d := time.Since(res.VerifiedTimestamps[0].Timestamp); d < 0 || d > time.Minute {
		t.Errorf("timestamp %v is not now", res.VerifiedTimestamps[0].Timestamp)
	}

	if _, err := verifyFor(t, s.TrustedRoot, b, s.OIDC.URL, repo+"/.github/workflows/other.yml@refs/heads/main"); err == nil ||
		!strings.Contains(err.Error(), "no matching CertificateIdentity") {
		t.Errorf("another workflow: %v, want no matching identity", err)
	}
	if _, err := verifyFor(t, s.TrustedRoot, b, "https://token.actions.githubusercontent.com", signerWF); err == nil ||
		!strings.Contains(err.Error(), "no matching CertificateIdentity") {
		t.Errorf("another issuer: %v, want no matching identity", err)
	}
}

// TestTrustedRootShape: the trusted root is the standard JSON, with the
// running Fulcio's CA (whose root is self-signed) and the TSA's chain.
func TestTrustedRootShape(t *testing.T) {
	s := Start(t)
	var tr struct {
		MediaType string `json:"mediaType"`
		CAs       []struct {
			URI       string `json:"uri"`
			CertChain struct {
				Certificates []struct {
					RawBytes []byte `json:"rawBytes"`
				} `json:"certificates"`
			} `json:"certChain"`
		} `json:"certificateAuthorities"`
		TSAs []struct {
			URI string `json:"uri"`
		} `json:"timestampAuthorities"`
		Tlogs []json.RawMessage `json:"tlogs"`
	}
	if err := json.Unmarshal(s.TrustedRoot, &tr); err != nil {
		t.Fatal(err)
	}
	// gh attestation verify --custom-trusted-root reads JSON lines: one
	// root a line, each ending in a newline.
	if n := bytes.Count(s.TrustedRoot, []byte("\n")); n != 1 || !bytes.HasSuffix(s.TrustedRoot, []byte("\n")) {
		t.Fatalf("trusted root is %d lines, want one ending in a newline", n)
	}
	if tr.MediaType != root.TrustedRootMediaType01 || len(tr.CAs) != 1 || len(tr.TSAs) != 1 || len(tr.Tlogs) != 0 {
		t.Fatalf("trusted root %s", s.TrustedRoot)
	}
	if tr.CAs[0].URI != s.FulcioURL || tr.TSAs[0].URI != s.TSAURL {
		t.Errorf("uris %q %q", tr.CAs[0].URI, tr.TSAs[0].URI)
	}
	chain := tr.CAs[0].CertChain.Certificates
	last, err := x509.ParseCertificate(chain[len(chain)-1].RawBytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := last.CheckSignatureFrom(last); err != nil || !last.IsCA {
		t.Errorf("Fulcio CA root is not a self-signed CA: %v", err)
	}
}

// TestFulcioRefusesTokens: Fulcio issues no certificate for a token from an
// issuer it does not trust, one signed in the trusted issuer's name by
// another key, one for another audience, or an expired one.
func TestFulcioRefusesTokens(t *testing.T) {
	s := Start(t)
	other := githubtest.NewOIDC(t)
	c := githubtest.Claims{Repository: repo, JobWorkflowRef: signerWF}
	for _, tc := range []struct {
		name, tok, reason string // reason: Fulcio's, in its log
	}{
		{"untrusted issuer", other.Token(c), "failed to match issuer URL " + other.URL + " from token with any configured providers"},
		{"forged issuer", other.Token(withIssuer(c, s.OIDC.URL)), "failed to verify id token signature"},
		{"wrong audience", s.OIDC.Token(withAudience(c, "not-sigstore")), `expected audience \"sigstore\" got [\"not-sigstore\"]`},
		{"expired", s.OIDC.Token(withExpiry(c, -time.Minute)), "token is expired"},
	} {
		_, err := keyless(s, tc.tok)
		if err == nil || !strings.Contains(err.Error(), "Fulcio returned 400") ||
			!strings.Contains(err.Error(), "error processing the identity token") {
			t.Errorf("%s: %v, want Fulcio's 400 for the identity token", tc.name, err)
			continue
		}
		if !logHas(s, tc.reason) {
			t.Errorf("%s: Fulcio's log does not give the reason %q", tc.name, tc.reason)
		}
	}
	// The same services still sign for a good token.
	if _, err := keyless(s, s.OIDC.Token(c)); err != nil {
		t.Fatalf("good token after refusals: %v", err)
	}
}

// logHas waits briefly for Fulcio to have logged want.
func logHas(s *Services, want string) bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(s.FulcioLog(), want) {
			return true
		}
	}
	return false
}

func withIssuer(c githubtest.Claims, iss string) githubtest.Claims      { c.Issuer = iss; return c }
func withAudience(c githubtest.Claims, a string) githubtest.Claims      { c.Audience = a; return c }
func withExpiry(c githubtest.Claims, d time.Duration) githubtest.Claims { c.Expiry = d; return c }

// TestStopLeavesNoProcess: once a test's cleanup ran, neither service's
// process (nor its group) is left.
func TestStopLeavesNoProcess(t *testing.T) {
	var pids []int
	started := false
	t.Run("services", func(t *testing.T) { pids = Start(t).pids; started = true })
	if !started {
		t.Skip("the services did not start (see the subtest)")
	}
	if len(pids) != 2 {
		t.Fatalf("pids %v", pids)
	}
	for _, pid := range pids {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d after cleanup: %v, want ESRCH", pid, err)
		}
	}
}

// TestTSANetworkIsolation: where namespaces are allowed the TSA runs in a
// network namespace of its own, so it reaches no network (and its fixed
// :2112 metrics port collides with nothing); two instances run at once.
func TestTSANetworkIsolation(t *testing.T) {
	a, b := Start(t), Start(t)
	if !a.tsaIsolated {
		t.Skip("network namespaces are refused here: the host-network fallback runs instead")
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Skip(err)
	}
	for _, s := range []*Services{a, b} {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", s.pids[1]))
		if err != nil || ns == self {
			t.Errorf("TSA %d network namespace %q (%v), the test's %q", s.pids[1], ns, err, self)
		}
	}
	if a.TSAURL == b.TSAURL || bytes.Equal(a.TrustedRoot, b.TrustedRoot) {
		t.Error("two Starts share a TSA or a trusted root")
	}
}

// TestHostNetworkTSA: the fallback for hosts without namespaces (the TSA on
// 127.0.0.1, serialized by a lock) signs and verifies as well, and a bundle
// from one set of services does not verify against another's trusted root.
func TestHostNetworkTSA(t *testing.T) {
	s := start(t, options{hostNetwork: true})
	if s.tsaIsolated {
		t.Fatal("hostNetwork ignored")
	}
	tok := s.OIDC.Token(githubtest.Claims{Repository: repo, JobWorkflowRef: signerWF})
	b, err := keyless(s, tok)
	if err != nil {
		t.Fatalf("keyless sign: %v", err)
	}
	if _, err := verifyFor(t, s.TrustedRoot, b, s.OIDC.URL, signerWF); err != nil {
		t.Fatalf("verify: %v", err)
	}
	other := Start(t)
	if _, err := verifyFor(t, other.TrustedRoot, b, s.OIDC.URL, signerWF); err == nil ||
		!strings.Contains(err.Error(), "threshold not met for verified signed timestamps") {
		t.Errorf("bundle verified against another TSA's root: %v, want unverified timestamps", err)
	}
	// This TSA, another Fulcio's CA: the certificate chain must fail.
	mixed := mixRoot(t, other.TrustedRoot, s.TrustedRoot)
	if _, err := verifyFor(t, mixed, b, s.OIDC.URL, signerWF); err == nil ||
		!strings.Contains(err.Error(), "leaf certificate verification failed") {
		t.Errorf("bundle verified against another Fulcio's CA: %v, want unknown authority", err)
	}
}

// mixRoot is a trusted root with caRoot's certificate authorities and
// tsaRoot's timestamp authorities.
func mixRoot(t *testing.T, caRoot, tsaRoot []byte) []byte {
	t.Helper()
	ca, err := root.NewTrustedRootFromJSON(caRoot)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := root.NewTrustedRootFromJSON(tsaRoot)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, ca.FulcioCertificateAuthorities(), nil, ts.TimestampingAuthorities(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMissingBinariesSkip: without the binaries Start skips, naming the
// variable to set.
func TestMissingBinariesSkip(t *testing.T) {
	t.Setenv(EnvBin, t.TempDir())
	t.Setenv(EnvRequire, "")
	var sub *testing.T
	t.Run("start", func(t *testing.T) {
		sub = t
		Start(t)
		t.Error("Start returned without binaries")
	})
	if !sub.Skipped() {
		t.Error("Start did not skip without binaries")
	}
}

// TestRunnerTokenThroughFulcio: a token fetched from the runner's request
// endpoint with go-githubactions, audience "sigstore", gets a certificate;
// one fetched without an audience (GitHub's default, the owner's URL) is
// refused by Fulcio.
func TestRunnerTokenThroughFulcio(t *testing.T) {
	s := Start(t)
	url, reqTok := s.OIDC.RequestEndpoint(githubtest.Claims{Repository: repo, JobWorkflowRef: signerWF})
	env := map[string]string{"ACTIONS_ID_TOKEN_REQUEST_URL": url, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": reqTok}
	a := githubactions.New(githubactions.WithGetenv(func(k string) string { return env[k] }))
	tok, err := a.GetIDToken(context.Background(), "sigstore")
	if err != nil {
		t.Fatal(err)
	}
	b, err := keyless(s, tok)
	if err != nil {
		t.Fatalf("keyless sign with the runner's token: %v", err)
	}
	if _, err := verifyFor(t, s.TrustedRoot, b, s.OIDC.URL, signerWF); err != nil {
		t.Fatalf("verify: %v", err)
	}
	tok, err = a.GetIDToken(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyless(s, tok); err == nil || !strings.Contains(err.Error(), "Fulcio returned 400") {
		t.Fatalf("token with GitHub's default audience: %v, want Fulcio's 400", err)
	}
	if !logHas(s, `expected audience \"sigstore\" got [\"https://github.com/octo-org\"]`) {
		t.Error("Fulcio's log does not refuse the default audience")
	}
}

// TestTrustBundleRefusals: the trusted root is built only from a
// well-formed answer: one chain of CERTIFICATE blocks for Fulcio, a leaf
// and a root for the TSA.
func TestTrustBundleRefusals(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"no chain", `{"chains":[]}`, "0 chains, want 1"},
		{"two chains", `{"chains":[{"certificates":[]},{"certificates":[]}]}`, "2 chains, want 1"},
		{"no certificate", `{"chains":[{"certificates":[]}]}`, "no certificate"},
		{"a key, not a certificate", `{"chains":[{"certificates":["-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"]}]}`, `PEM block "PUBLIC KEY"`},
		{"not JSON", `<html>`, "fulcio trust bundle"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, tc.body) }))
		_, err := fulcioCA(srv.URL)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusServiceUnavailable) }))
	defer srv.Close()
	if _, err := timestampAuthority(srv.URL); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("TSA answering 503: %v", err)
	}
}

// A failed start attempt leaves Fulcio's legacy socket behind; the next
// attempt must not fail on it ("bind: address already in use": CI saw all
// three attempts fail after a port race took the first).
func TestFulcioStartsOverStaleSocket(t *testing.T) {
	fulcioBin, _ := binaries(t)
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "pgsig") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	if err := os.WriteFile(filepath.Join(sockDir, "legacy.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	url, p := startFulcio(t, fulcioBin, dir, sockDir, githubtest.NewOIDC(t).URL)
	defer p.stop()
	if _, err := http.Get(url + "/api/v2/trustBundle"); err != nil {
		t.Fatal(err)
	}
}
