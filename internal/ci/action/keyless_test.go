package action

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/replay"
)

// approvedRun runs the fixture's PR to COMPLETE and returns the result and
// the uploaded artifact.
func approvedRun(t *testing.T) (*fixture, *Result, []byte) {
	t.Helper()
	fx := newFixture(t, processContract, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	zipData, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head)
	if !ok {
		t.Fatal("no artifact uploaded")
	}
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", fx.release()
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	return fx, res, zipData
}

// The companion Sigstore bundle must carry the archive's envelope; an
// artifact may hold nothing else.
func TestVerifyCompanion(t *testing.T) {
	fx, res, zipData := approvedRun(t)
	comp := res.RunID + ".bundle.sigstore.json"
	replaceComp := func(edit func([]byte) []byte) []byte {
		return rezip(t, zipData, func(files map[string][]byte) { files[comp] = edit(files[comp]) })
	}
	otherSig := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64))
	cases := []struct {
		name, reason, detail string
		zip                  []byte
	}{
		{"companion signature replaced", string(gate.ReasonCompanion), "signature differs", replaceComp(func(b []byte) []byte {
			sb, err := sigstore.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Replace(b, []byte(base64.StdEncoding.EncodeToString(sb.Sig)), []byte(otherSig), 1)
		})},
		{"companion hint replaced", string(gate.ReasonCompanion), "hint", replaceComp(func(b []byte) []byte {
			sb, err := sigstore.Read(b)
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Replace(b, []byte(sb.Hint), []byte(strings.Repeat("0", 64)), 1)
		})},
		{"companion not JSON", string(gate.ReasonCompanion), comp, replaceComp(func([]byte) []byte { return []byte("{") })},
		{"companion with a duplicate member", string(gate.ReasonCompanion), comp, replaceComp(func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"mediaType"`), []byte(`"mediaType": "x", "mediaType"`), 1)
		})},
		{"extra file", string(gate.ReasonBadZip), "only its companion", rezip(t, zipData, func(files map[string][]byte) { files["notes.txt"] = []byte("hi") })},
		{"two archives", string(gate.ReasonBadZip), "2 .tar.gz", rezip(t, zipData, func(files map[string][]byte) {
			files["other.bundle.tar.gz"] = files[res.RunID+".bundle.tar.gz"]
		})},
		{"companion of another name", string(gate.ReasonBadZip), "only its companion", rezip(t, zipData, func(files map[string][]byte) {
			files["x.sigstore.json"] = files[comp]
			delete(files, comp)
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx.gh.TamperBlob(ArtifactPrefix+fx.head, tc.zip)
			vr, err := fx.verify()
			mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
			if vr.Reason != tc.reason || !strings.Contains(vr.Detail, tc.detail) || fx.outputs()["reason"] != tc.reason {
				t.Fatalf("reason %q detail %q, want %q with %q", vr.Reason, vr.Detail, tc.reason, tc.detail)
			}
		})
	}
	// Without a companion (an artifact made before the action uploaded
	// one) the archive alone decides.
	fx.gh.TamperBlob(ArtifactPrefix+fx.head, rezip(t, zipData, func(files map[string][]byte) { delete(files, comp) }))
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vr.RunID != res.RunID || vr.Signer != "" || fx.outputs()["signer"] != "" {
		t.Fatalf("%+v", vr)
	}
}

// A local bundle input is checked against the companion beside it.
func TestVerifyLocalCompanion(t *testing.T) {
	fx, res, _ := approvedRun(t)
	fx.env["INPUT_BUNDLE"] = res.BundlePath
	delete(fx.env, "INPUT_GITHUB-TOKEN")
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	writeFile(t, fx.ws+"/"+res.SigstorePath, "{}\n")
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(gate.ReasonCompanion) {
		t.Fatalf("%+v", vr)
	}
}

func TestSigningInputs(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"INPUT_SIGNING": "sometimes"}, `input signing: "sometimes" is not key or keyless`},
		{map[string]string{"INPUT_SIGNING": "keyless"}, "input signing-key is set but input signing is keyless"},
		{map[string]string{"INPUT_SIGNING": "keyless", "INPUT_SIGNING-KEY": "", "INPUT_FULCIO-URL": "http://fulcio.example"}, "plain http to a host that is not loopback"},
		{map[string]string{"INPUT_SIGNING": "keyless", "INPUT_SIGNING-KEY": "", "INPUT_TSA-URL": "https://u:secret@tsa.example/api/v1/timestamp"}, "carries credentials"},
		{map[string]string{"INPUT_SIGNING": "keyless", "INPUT_SIGNING-KEY": "", "INPUT_REKOR-URL": "ftp://rekor.example"}, `scheme "ftp" is not https`},
		{map[string]string{"INPUT_SIGNING": "keyless", "INPUT_SIGNING-KEY": "", "INPUT_FULCIO-URL": "fulcio.sigstore.dev"}, "not an absolute http(s) URL"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			fx := newFixture(t, processContract, nil)
			fx.prEvent()
			for k, v := range tc.env {
				fx.env[k] = v
			}
			res, err := fx.run()
			mustCode(t, res.Code, ExitUsage, err, fx.log.String())
			if !strings.Contains(err.Error(), tc.want) || res.RunID != "" {
				t.Fatalf("err %v, want %q, run %q", err, tc.want, res.RunID)
			}
			// A URL's password is never echoed (the error redacts it).
			if strings.Contains(fx.log.String(), "secret") || strings.Contains(err.Error(), "secret") {
				t.Fatalf("credentials printed:\n%s", fx.log.String())
			}
		})
	}
}

// A keyless job without id-token: write runs, but a COMPLETE run fails
// with an error naming the permission; nothing is uploaded.
func TestKeylessWithoutIDTokenPermission(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	fx.env["INPUT_SIGNING"] = "keyless"
	delete(fx.env, "INPUT_SIGNING-KEY")
	res, err := fx.run()
	mustCode(t, res.Code, ExitUsage, err, fx.log.String())
	if !strings.Contains(err.Error(), "permissions: id-token: write") || res.State != replay.Complete {
		t.Fatalf("err %v state %s", err, res.State)
	}
	if !strings.Contains(fx.log.String(), "::warning title=ProofGate no OIDC token::") {
		t.Fatalf("no early warning:\n%s", fx.log.String())
	}
	if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); ok || res.BundlePath != "" {
		t.Fatal("uploaded without a signature")
	}
}

// A fork PR never gets an OIDC token: it is reported like a fork without a
// key, not as a configuration error.
func TestKeylessFork(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.gh.AddPR(owner, repo, githubtest.PR{Number: prNum, Author: alice, HeadSHA: fx.head, BaseSHA: fx.base, HeadRepo: "mallory/widget"})
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	fx.env["INPUT_SIGNING"] = "keyless"
	delete(fx.env, "INPUT_SIGNING-KEY")
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if s := fx.summary(); !strings.Contains(s, "no OIDC token") || !strings.Contains(s, "no bundle was exported") {
		t.Fatalf("summary:\n%s", s)
	}
	if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); ok {
		t.Fatal("uploaded")
	}
}

// tokenEndpoint is the runner's OIDC token endpoint on 127.0.0.1.
type tokenEndpoint struct {
	mu        sync.Mutex
	audiences []string
	auth      []string
}

func newTokenEndpoint(t *testing.T, reqToken, idToken string, status int) (*tokenEndpoint, string) {
	te := &tokenEndpoint{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.mu.Lock()
		te.audiences = append(te.audiences, r.URL.Query().Get("audience"))
		te.auth = append(te.auth, r.Header.Get("Authorization"))
		te.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+reqToken || r.URL.Query().Get("api-version") != "2.0" {
			http.Error(w, "bad request token", http.StatusUnauthorized)
			return
		}
		if status != http.StatusOK {
			http.Error(w, "refused", status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"count":1,"value":"` + idToken + `"}`))
	}))
	t.Cleanup(srv.Close)
	return te, srv.URL + "/_apis/distributedtask/token?api-version=2.0"
}

// closedURL is an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// The keyless job asks the runner's endpoint for a token of audience
// sigstore with the request token, and masks both before anything can
// print them. Fulcio is unreachable here: the job fails as the
// environment's, uploading nothing.
func TestKeylessTokenRequest(t *testing.T) {
	const reqToken, idToken = "runner-request-token-5f2a", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
	for _, tc := range []struct {
		name   string
		status int
		want   string
	}{{"token issued", http.StatusOK, ""}, {"token refused", http.StatusForbidden, "get the OIDC token"}} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, processContract, nil)
			fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
			te, u := newTokenEndpoint(t, reqToken, idToken, tc.status)
			fx.env["INPUT_SIGNING"] = "keyless"
			delete(fx.env, "INPUT_SIGNING-KEY")
			fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = u, reqToken
			fx.env["INPUT_FULCIO-URL"], fx.env["INPUT_TSA-URL"] = closedURL(t), closedURL(t)+"/api/v1/timestamp"
			res, err := fx.run()
			mustCode(t, res.Code, ExitEnv, err, fx.log.String())
			if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			te.mu.Lock()
			if len(te.audiences) != 1 || te.audiences[0] != OIDCAudience || te.auth[0] != "Bearer "+reqToken {
				t.Fatalf("token requests: audiences %v auth %v", te.audiences, te.auth)
			}
			te.mu.Unlock()
			log := fx.log.String()
			if !strings.HasPrefix(log, "::add-mask::") || strings.Index(log, reqToken) != strings.Index(log, "::add-mask::"+reqToken)+len("::add-mask::") {
				t.Fatalf("request token not masked before use:\n%s", log)
			}
			if tc.status == http.StatusOK && strings.Index(log, idToken) != strings.Index(log, "::add-mask::"+idToken)+len("::add-mask::") {
				t.Fatalf("OIDC token not masked first:\n%s", log)
			}
			if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); ok || res.BundlePath != "" {
				t.Fatal("uploaded without a signature")
			}
		})
	}
}

// Identity inputs: pins without a trusted root, a trusted root without a
// pinned workflow, and malformed pins are refused as usage.
func TestVerifyIdentityInputs(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", fx.release()
	const wf = "OWNER/proofgate/.github/workflows/proofgate.yml@refs/tags/v1"
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"INPUT_SIGNER-WORKFLOW": wf}, "need input trusted-root"},
		{map[string]string{"INPUT_SOURCE-REPO": "acme/widget"}, "need input trusted-root"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json"}, "unpinned identity"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json", "INPUT_SOURCE-REPO": "acme/widget"}, "unpinned identity"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json"}, "nothing pins the signer"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "../trusted_root.json", "INPUT_SIGNER-WORKFLOW": wf}, "not a clean path"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json", "INPUT_SIGNER-WORKFLOW": "https://github.com/" + wf}, "no https://HOST/ prefix"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json", "INPUT_SIGNER-WORKFLOW": "OWNER/proofgate/proofgate.yml"}, "is not OWNER/REPO/.github/workflows/FILE.yml"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json", "INPUT_SIGNER-WORKFLOW": wf, "INPUT_SOURCE-REF": "main"}, "not a full ref"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json", "INPUT_SIGNER-WORKFLOW": wf, "INPUT_SOURCE-REPO": "widget"}, "not OWNER/REPO"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "trusted_root.json", "INPUT_SIGNER-WORKFLOW": wf, "INPUT_CERTIFICATE-OIDC-ISSUER": "http://issuer.example"}, "certificate-oidc-issuer"},
		{map[string]string{"INPUT_TRUSTED-ROOT": "missing/trusted_root.json", "INPUT_SIGNER-WORKFLOW": wf}, "input trusted-root"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			for k, v := range tc.env {
				fx.env[k] = v
			}
			defer func() {
				for k := range tc.env {
					delete(fx.env, k)
				}
			}()
			vr, err := fx.verify()
			mustCode(t, vr.Code, ExitUsage, err, fx.log.String())
			if vr.Reason != string(gate.ReasonUsage) || !strings.Contains(vr.Detail, tc.want) || fx.outputs()["verdict"] != bundle.VerdictRefused {
				t.Fatalf("reason %q detail %q, want %q", vr.Reason, vr.Detail, tc.want)
			}
		})
	}
}

// Key mode never asks for an OIDC token, even when the job could get one.
func TestKeyModeNeedsNoIDToken(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	te, u := newTokenEndpoint(t, "req", "tok", http.StatusOK)
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = u, "req"
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	te.mu.Lock()
	defer te.mu.Unlock()
	if len(te.audiences) != 0 || res.ArtifactID == 0 {
		t.Fatalf("key mode requested %d tokens; artifact %d", len(te.audiences), res.ArtifactID)
	}
}

// failingMaterial is a MaterialVerifiers that refuses everything and
// counts its calls.
type failingMaterial struct{ calls int }

func (f *failingMaterial) VerifierFor(string, []byte, []byte) (envelope.WitnessedKey, error) {
	f.calls++
	return nil, errors.New("refused")
}

// With a trusted root configured, a key-signed bundle still verifies
// against the trust store alone: the material verifiers are never asked,
// and no keyless signer is reported.
func TestKeyBundleWithMaterialVerifiers(t *testing.T) {
	fx, res, _ := approvedRun(t)
	store, err := trust.Load(fx.trust)
	if err != nil {
		t.Fatal(err)
	}
	mv := &failingMaterial{}
	o := gate.Options{Store: store, Policy: bundle.VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 1, Repo: owner + "/" + repo, Material: mv}}
	gr := gate.File(o, filepath.Join(fx.ws, res.BundlePath), res.BundlePath)
	r := gr.Accepted
	if gr.Refusal != nil || r == nil || r.RunID != res.RunID {
		t.Fatalf("key bundle: %+v", gr.Refusal)
	}
	if mv.calls != 0 || r.Signer != "" || !r.Witnessed.IsZero() {
		t.Fatalf("material verifiers asked %d times for a key bundle", mv.calls)
	}
}
