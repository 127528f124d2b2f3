package githubtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/sethvargo/go-githubactions"
)

// fulcioRequired are the claims Fulcio v1.8.8's github-workflow principal
// refuses a token without (pkg/identity/github/principal.go).
var fulcioRequired = []string{"job_workflow_ref", "sha", "event_name", "repository",
	"workflow", "ref", "job_workflow_sha", "runner_environment", "repository_id",
	"repository_owner", "repository_owner_id", "repository_visibility",
	"workflow_ref", "workflow_sha", "run_id", "run_attempt"}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// jwksOf fetches an issuer's keys the way a relying party does: discovery
// document, then its jwks_uri.
func jwksOf(t *testing.T, issuer string) jose.JSONWebKeySet {
	t.Helper()
	var disc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	getJSON(t, issuer+"/.well-known/openid-configuration", &disc)
	if disc.Issuer != issuer || !strings.HasPrefix(disc.JWKSURI, issuer+"/") || len(disc.Algs) != 1 || disc.Algs[0] != "RS256" {
		t.Fatalf("discovery document %+v for issuer %s", disc, issuer)
	}
	var set jose.JSONWebKeySet
	getJSON(t, disc.JWKSURI, &set)
	if len(set.Keys) != 1 || !set.Keys[0].Valid() || !set.Keys[0].IsPublic() {
		t.Fatalf("jwks %+v: want one public key", set)
	}
	return set
}

// verify checks tok's signature against set and returns its claims.
func verify(tok string, set jose.JSONWebKeySet) (jwt.Claims, map[string]any, error) {
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return jwt.Claims{}, nil, err
	}
	if len(parsed.Headers) != 1 {
		return jwt.Claims{}, nil, errors.New("want one signature header")
	}
	keys := set.Key(parsed.Headers[0].KeyID)
	if len(keys) != 1 {
		return jwt.Claims{}, nil, errors.New("kid not in the issuer's key set")
	}
	var std jwt.Claims
	var all map[string]any
	err = parsed.Claims(keys[0].Key, &std, &all)
	return std, all, err
}

func TestOIDCTokenVerifiesAgainstJWKS(t *testing.T) {
	o := NewOIDC(t)
	set := jwksOf(t, o.URL)
	wf := "octo-org/octo-repo/.github/workflows/release.yml@refs/tags/v1"
	tok := o.Token(Claims{Ref: "refs/tags/v1", JobWorkflowRef: wf})
	std, all, err := verify(tok, set)
	if err != nil {
		t.Fatalf("token does not verify against the issuer's JWKS: %v", err)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: o.URL, AnyAudience: jwt.Audience{"sigstore"}, Time: time.Now()}, 0); err != nil {
		t.Fatalf("claims: %v", err)
	}
	if std.Subject != "repo:octo-org/octo-repo:ref:refs/tags/v1" {
		t.Errorf("sub = %q", std.Subject)
	}
	if got := std.Expiry.Time().Sub(std.IssuedAt.Time()); got != DefaultExpiry {
		t.Errorf("lifetime %v, want %v", got, DefaultExpiry)
	}
	for _, name := range fulcioRequired {
		if s, _ := all[name].(string); s == "" {
			t.Errorf("claim %s missing (Fulcio requires it): %v", name, all[name])
		}
	}
	if all["job_workflow_ref"] != wf || all["ref_type"] != "tag" || all["repository_owner"] != "octo-org" {
		t.Errorf("claims %v", all)
	}
	if all["workflow_ref"] != "octo-org/octo-repo/.github/workflows/proofgate.yml@refs/tags/v1" {
		t.Errorf("workflow_ref = %v", all["workflow_ref"])
	}
}

// TestOIDCTokenRefusals: a token another issuer signed, one signed in this
// issuer's name by another key, a tampered one and an expired one are all
// refused by a relying party using this issuer's JWKS.
func TestOIDCTokenRefusals(t *testing.T) {
	o, other := NewOIDC(t), NewOIDC(t)
	set := jwksOf(t, o.URL)

	if _, _, err := verify(other.Token(Claims{}), set); err == nil || !strings.Contains(err.Error(), "kid not in") {
		t.Errorf("another issuer's token: %v, want unknown kid", err)
	}
	// Another key under this issuer's kid and name: the signature must fail.
	forger, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: other.key, KeyID: o.kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := jwt.Signed(forger).Claims(jwt.Claims{Issuer: o.URL, Subject: "repo:octo-org/octo-repo:ref:refs/heads/main"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := verify(forged, set); !errors.Is(err, jose.ErrCryptoFailure) {
		t.Errorf("token signed by another key under this kid: %v, want %v", err, jose.ErrCryptoFailure)
	}
	// One changed payload byte.
	parts := strings.Split(o.Token(Claims{}), ".")
	p := []byte(parts[1])
	p[10] ^= 1
	if _, _, err := verify(parts[0]+"."+string(p)+"."+parts[2], set); err == nil {
		t.Error("tampered token verified")
	}
	std, _, err := verify(o.Token(Claims{Expiry: -time.Minute, Audience: "other"}), set)
	if err != nil {
		t.Fatal(err)
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: o.URL, AnyAudience: jwt.Audience{"sigstore"}, Time: time.Now()}, 0)
	if !errors.Is(err, jwt.ErrExpired) && !errors.Is(err, jwt.ErrInvalidAudience) {
		t.Errorf("expired token with another audience: %v", err)
	}
}

func TestOIDCSubjectForms(t *testing.T) {
	o := NewOIDC(t)
	for _, tc := range []struct {
		c    Claims
		want string
	}{
		{Claims{}, "repo:octo-org/octo-repo:ref:refs/heads/main"},
		{Claims{Repository: "a/b", EventName: "pull_request", Ref: "refs/pull/7/merge"}, "repo:a/b:pull_request"},
		{Claims{Environment: "prod"}, "repo:octo-org/octo-repo:environment:prod"},
		{Claims{Subject: "custom"}, "custom"},
	} {
		if got := o.fill(tc.c).Subject; got != tc.want {
			t.Errorf("%+v: sub %q, want %q", tc.c, got, tc.want)
		}
	}
}

func tokenRequest(t *testing.T, method, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// TestRequestEndpointRefusals: the runner's token endpoint refuses a wrong,
// missing or wrongly-schemed bearer, another endpoint's token, a method
// other than GET and two audiences.
func TestRequestEndpointRefusals(t *testing.T) {
	o := NewOIDC(t)
	url, tok := o.RequestEndpoint(Claims{})
	url2, tok2 := o.RequestEndpoint(Claims{})
	for _, tc := range []struct {
		name, method, url, auth string
		want                    int
	}{
		{"wrong bearer", "GET", url + "&audience=sigstore", "Bearer " + tok + "x", 401},
		{"no authorization", "GET", url + "&audience=sigstore", "", 401},
		{"basic scheme", "GET", url + "&audience=sigstore", "Basic " + tok, 401},
		{"another endpoint's token", "GET", url + "&audience=sigstore", "Bearer " + tok2, 401},
		{"empty bearer", "GET", url2, "Bearer ", 401},
		{"POST", "POST", url + "&audience=sigstore", "Bearer " + tok, 405},
		{"two audiences", "GET", url + "&audience=a&audience=b", "Bearer " + tok, 400},
		{"unknown path", "GET", o.URL + "/_apis/nothing?api-version=2.0", "Bearer " + tok, 404},
	} {
		code, body := tokenRequest(t, tc.method, tc.url, tc.auth)
		if code != tc.want || strings.Contains(body, `"value"`) {
			t.Errorf("%s: %d %s, want %d and no token", tc.name, code, body, tc.want)
		}
	}
}

// TestRequestEndpointAudience drives the endpoint with go-githubactions'
// GetIDToken, the client the action uses, as the runner's environment
// provides it.
func TestRequestEndpointAudience(t *testing.T) {
	o := NewOIDC(t)
	set := jwksOf(t, o.URL)
	url, tok := o.RequestEndpoint(Claims{Repository: "acme/widget", JobWorkflowRef: "acme/ci/.github/workflows/sign.yml@refs/heads/main"})
	env := map[string]string{"ACTIONS_ID_TOKEN_REQUEST_URL": url, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": tok}
	a := githubactions.New(githubactions.WithGetenv(func(k string) string { return env[k] }))
	for aud, want := range map[string]string{"sigstore": "sigstore", "": "https://github.com/acme"} {
		jwtString, err := a.GetIDToken(context.Background(), aud)
		if err != nil {
			t.Fatalf("audience %q: %v", aud, err)
		}
		std, all, err := verify(jwtString, set)
		if err != nil {
			t.Fatalf("audience %q: %v", aud, err)
		}
		if len(std.Audience) != 1 || std.Audience[0] != want || all["job_workflow_ref"] != "acme/ci/.github/workflows/sign.yml@refs/heads/main" {
			t.Errorf("audience %q: aud %v, claims %v", aud, std.Audience, all)
		}
	}
	env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = tok + "0"
	if _, err := a.GetIDToken(context.Background(), "sigstore"); err == nil || !strings.Contains(err.Error(), "Bad credentials") {
		t.Errorf("wrong request token through GetIDToken: %v", err)
	}
}
