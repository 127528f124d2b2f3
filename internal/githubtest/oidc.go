package githubtest

// This file is the fake GitHub Actions OIDC issuer and the runner's token
// request endpoint.
//
// Issuer (OIDC.URL, http://127.0.0.1:PORT, no trailing slash):
//
//	GET /.well-known/openid-configuration  the discovery document, shaped like
//	    https://token.actions.githubusercontent.com's: issuer, jwks_uri,
//	    response_types_supported ["id_token"], subject_types_supported,
//	    id_token_signing_alg_values_supported ["RS256"], scopes_supported,
//	    claims_supported.
//	GET /.well-known/jwks                  {"keys": [one RSA-2048 public JWK,
//	    "use": "sig", "alg": "RS256", "kid"]}; the key is generated per OIDC.
//
// Tokens are compact JWS (RS256, header {"alg","kid","typ":"JWT"}) carrying
// GitHub's claims: iss, sub, aud, exp, iat, nbf, jti and the custom claims
// (all strings): actor, actor_id, base_ref, event_name, head_ref,
// job_workflow_ref, job_workflow_sha, ref, ref_type, repository,
// repository_id, repository_owner, repository_owner_id,
// repository_visibility, run_attempt, run_id, run_number,
// runner_environment, sha, workflow, workflow_ref, workflow_sha (and
// environment when set). Fulcio v1.8.8's "github-workflow" principal
// (pkg/identity/github) refuses a token missing any of job_workflow_ref, sha,
// event_name, repository, workflow, ref, job_workflow_sha,
// runner_environment, repository_id, repository_owner, repository_owner_id,
// repository_visibility, workflow_ref, workflow_sha, run_id, run_attempt;
// Claims fills each with a default.
//
// Token request endpoint (RequestEndpoint), as GitHub's runner exposes it in
// ACTIONS_ID_TOKEN_REQUEST_URL / ACTIONS_ID_TOKEN_REQUEST_TOKEN: the URL
// already carries a query (…/idtoken?api-version=2.0) so a client appends
// "&audience=A".
//
//	GET URL[&audience=A] with "Authorization: Bearer <request token>"
//	  200 {"value": "<jwt>"}: the endpoint's claims with aud = A; without an
//	      audience parameter (or with an empty one) aud is GitHub's default,
//	      the repository owner's URL "https://github.com/OWNER".
//	  401 missing or wrong bearer token (the scheme is matched
//	      case-insensitively, the token exactly).
//	  400 more than one audience parameter.
//	  405 any method but GET.

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// DefaultAudience is the audience a Claims without one gets: Sigstore's.
const DefaultAudience = "sigstore"

// DefaultExpiry is a token's lifetime when Claims.Expiry is zero (what
// GitHub issues today: exp = iat + 6h, nbf = iat - 5m).
const DefaultExpiry = 6 * time.Hour

// OIDC is a fake GitHub Actions OIDC issuer on 127.0.0.1.
type OIDC struct {
	URL string // issuer URL: the iss of its tokens

	srv    *httptest.Server
	key    *rsa.PrivateKey
	kid    string
	signer jose.Signer

	mu        sync.Mutex
	endpoints map[string]endpoint // path -> endpoint
}

type endpoint struct {
	token  string
	claims Claims
}

// Claims are GitHub's token claims; zero fields get defaults from
// Repository, Ref and WorkflowRef (see fill).
type Claims struct {
	Repository           string // "OWNER/REPO"; default "octo-org/octo-repo"
	RepositoryID         string
	RepositoryOwner      string // default OWNER of Repository
	RepositoryOwnerID    string
	RepositoryVisibility string // default "public"
	Ref                  string // default "refs/heads/main"
	RefType              string // default "tag" for refs/tags/..., else "branch"
	SHA                  string // default derived from Repository and Ref
	EventName            string // default "push"
	Workflow             string // the workflow's name; default "proofgate"
	WorkflowRef          string // default Repository+"/.github/workflows/proofgate.yml@"+Ref
	WorkflowSHA          string // default SHA
	JobWorkflowRef       string // default WorkflowRef
	JobWorkflowSHA       string // default WorkflowSHA
	RunID                string
	RunNumber            string
	RunAttempt           string
	RunnerEnvironment    string // default "github-hosted"
	Actor                string
	ActorID              string
	HeadRef, BaseRef     string // "" as GitHub sends them outside pull requests
	Environment          string // a deployment environment; changes sub
	// Subject defaults to GitHub's: "repo:OWNER/REPO:environment:ENV" with
	// an Environment, "repo:OWNER/REPO:pull_request" for pull_request(_target)
	// events, else "repo:OWNER/REPO:ref:REF".
	Subject  string
	Audience string        // default DefaultAudience
	Expiry   time.Duration // lifetime from IssuedAt; default DefaultExpiry; negative = expired
	IssuedAt time.Time     // default now
	// Issuer overrides iss (default the OIDC's URL): a token one issuer
	// signs in another's name.
	Issuer string
}

// NewOIDC starts an issuer with a fresh RSA key; it stops at t.Cleanup.
func NewOIDC(t testing.TB) *OIDC {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("oidc key: %v", err)
	}
	o := &OIDC{key: key, endpoints: map[string]endpoint{}}
	o.kid = keyID(&key.PublicKey)
	o.signer, err = jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: o.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatalf("oidc signer: %v", err)
	}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	o.URL = o.srv.URL
	return o
}

// keyID names a public key as its JWK thumbprint (RFC 7638), base64url.
func keyID(pub *rsa.PublicKey) string {
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		panic(err) // an RSA public key always has a thumbprint
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

// Token returns a JWT for c signed by this issuer's key.
func (o *OIDC) Token(c Claims) string {
	c = o.fill(c)
	exp := c.IssuedAt.Add(c.Expiry)
	std := jwt.Claims{
		Issuer:    c.Issuer,
		Subject:   c.Subject,
		Audience:  jwt.Audience{c.Audience},
		Expiry:    jwt.NewNumericDate(exp),
		IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
		NotBefore: jwt.NewNumericDate(c.IssuedAt.Add(-5 * time.Minute)),
		ID:        randomHex(16),
	}
	tok, err := jwt.Signed(o.signer).Claims(std).Claims(c.custom()).Serialize()
	if err != nil {
		panic("githubtest: signing a token: " + err.Error()) // RS256 over JSON cannot fail
	}
	return tok
}

// custom is the token's GitHub-specific claims.
func (c Claims) custom() map[string]any {
	m := map[string]any{
		"actor": c.Actor, "actor_id": c.ActorID, "base_ref": c.BaseRef,
		"event_name": c.EventName, "head_ref": c.HeadRef,
		"job_workflow_ref": c.JobWorkflowRef, "job_workflow_sha": c.JobWorkflowSHA,
		"ref": c.Ref, "ref_type": c.RefType, "repository": c.Repository,
		"repository_id": c.RepositoryID, "repository_owner": c.RepositoryOwner,
		"repository_owner_id": c.RepositoryOwnerID, "repository_visibility": c.RepositoryVisibility,
		"run_attempt": c.RunAttempt, "run_id": c.RunID, "run_number": c.RunNumber,
		"runner_environment": c.RunnerEnvironment, "sha": c.SHA, "workflow": c.Workflow,
		"workflow_ref": c.WorkflowRef, "workflow_sha": c.WorkflowSHA,
	}
	if c.Environment != "" {
		m["environment"] = c.Environment
	}
	return m
}

// fill gives every zero field of c its default.
func (o *OIDC) fill(c Claims) Claims {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Repository, "octo-org/octo-repo")
	owner, _, _ := strings.Cut(c.Repository, "/")
	def(&c.RepositoryOwner, owner)
	def(&c.RepositoryID, "74")
	def(&c.RepositoryOwnerID, "65")
	def(&c.RepositoryVisibility, "public")
	def(&c.Ref, "refs/heads/main")
	if strings.HasPrefix(c.Ref, "refs/tags/") {
		def(&c.RefType, "tag")
	}
	def(&c.RefType, "branch")
	sum := sha256.Sum256([]byte(c.Repository + "\x00" + c.Ref))
	def(&c.SHA, hex.EncodeToString(sum[:20]))
	def(&c.EventName, "push")
	def(&c.Workflow, "proofgate")
	def(&c.WorkflowRef, c.Repository+"/.github/workflows/proofgate.yml@"+c.Ref)
	def(&c.WorkflowSHA, c.SHA)
	def(&c.JobWorkflowRef, c.WorkflowRef)
	def(&c.JobWorkflowSHA, c.WorkflowSHA)
	def(&c.RunID, "1000")
	def(&c.RunNumber, "1")
	def(&c.RunAttempt, "1")
	def(&c.RunnerEnvironment, "github-hosted")
	def(&c.Actor, "octocat")
	def(&c.ActorID, "583231")
	def(&c.Subject, subject(c))
	def(&c.Audience, DefaultAudience)
	def(&c.Issuer, o.URL)
	if c.Expiry == 0 {
		c.Expiry = DefaultExpiry
	}
	if c.IssuedAt.IsZero() {
		c.IssuedAt = time.Now()
	}
	return c
}

// subject is GitHub's default sub claim for c.
func subject(c Claims) string {
	switch {
	case c.Environment != "":
		return "repo:" + c.Repository + ":environment:" + c.Environment
	case c.EventName == "pull_request" || c.EventName == "pull_request_target":
		return "repo:" + c.Repository + ":pull_request"
	}
	return "repo:" + c.Repository + ":ref:" + c.Ref
}

// RequestEndpoint serves the runner's token request for c: GET
// url+"&audience=A" with "Authorization: Bearer <reqToken>" returns
// {"value": Token(c with Audience A)}. Each call makes a new endpoint with
// its own request token.
func (o *OIDC) RequestEndpoint(c Claims) (url, reqToken string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	path := "/_apis/distributedtask/hubs/Actions/plans/" + randomHex(16) + "/jobs/" + randomHex(16) + "/idtoken"
	reqToken = randomHex(32)
	o.endpoints[path] = endpoint{token: reqToken, claims: c}
	return o.URL + path + "?api-version=2.0", reqToken
}

func (o *OIDC) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		o.serveDiscovery(w, r)
	case "/.well-known/jwks":
		writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &o.key.PublicKey, KeyID: o.kid, Algorithm: string(jose.RS256), Use: "sig"},
		}})
	default:
		o.serveTokenRequest(w, r)
	}
}

func (o *OIDC) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                o.URL,
		"jwks_uri":                              o.URL + "/.well-known/jwks",
		"subject_types_supported":               []string{"public", "pairwise"},
		"response_types_supported":              []string{"id_token"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid"},
		"claims_supported": []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf",
			"ref", "sha", "repository", "repository_id", "repository_owner",
			"repository_owner_id", "repository_visibility", "run_id", "run_number",
			"run_attempt", "runner_environment", "actor", "actor_id", "workflow",
			"workflow_ref", "workflow_sha", "head_ref", "base_ref", "event_name",
			"ref_type", "environment", "job_workflow_ref", "job_workflow_sha"},
	})
}

func (o *OIDC) serveTokenRequest(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	ep, ok := o.endpoints[r.URL.Path]
	o.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"message": "method not allowed"})
		return
	}
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") || subtle.ConstantTimeCompare([]byte(tok), []byte(ep.token)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	auds := r.URL.Query()["audience"]
	if len(auds) > 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "only one audience is allowed"})
		return
	}
	c := ep.claims
	c.Audience = ""
	if len(auds) == 1 {
		c.Audience = auds[0]
	}
	if c.Audience == "" {
		c = o.fill(c)
		c.Audience = "https://github.com/" + c.RepositoryOwner
	}
	writeJSON(w, http.StatusOK, map[string]string{"value": o.Token(c)})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
