package githubtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/internal/strictjson"
)

const twirpPrefix = "/twirp/github.actions.results.api.v1.ArtifactService/"

// RuntimeToken makes the fake accept a runtime token for the given backend
// ids and returns it: an (unsigned) JWT whose scp claim carries
// "Actions.Results:<run>:<job>", shaped like ACTIONS_RUNTIME_TOKEN.
func (s *Server) RuntimeToken(runBackendID, jobBackendID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": "RS256", "x5t": "fake"})
	p, _ := json.Marshal(map[string]any{
		"nameid": "dddddddd-dddd-dddd-dddd-dddddddddddd",
		"scp":    "Actions.ExampleScope Actions.Results:" + runBackendID + ":" + jobBackendID,
		"iss":    "vstoken.actions.githubusercontent.com",
		"exp":    4102444800,
		"jti":    s.URL + "/" + strconv.FormatInt(s.id(), 10),
	})
	tok := enc(h) + "." + enc(p) + "." + enc([]byte("signature"))
	s.runtimeToken, s.runID, s.jobID = tok, runBackendID, jobBackendID
	return tok
}

// ResultsURL is the value for ACTIONS_RESULTS_URL.
func (s *Server) ResultsURL() string { return s.URL + "/" }

// SetRun makes artifacts finalized through the Twirp service appear in the
// REST artifact list of owner/repo for headSHA (as the run's artifacts do).
func (s *Server) SetRun(owner, repo, headSHA string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runRepo, s.runHeadSHA = owner+"/"+repo, headSHA
}

// Uploaded returns the finalized bytes of an artifact uploaded through the
// Twirp service.
func (s *Server) Uploaded(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.uploads[name]
	if u == nil || !u.finalized {
		return nil, false
	}
	return s.blobs[u.key], true
}

// TamperBlob replaces the stored bytes of an uploaded or listed artifact's
// blob (for tamper tests).
func (s *Server) TamperBlob(name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.uploads[name]; u != nil {
		s.blobs[u.key] = data
	}
	for _, rs := range s.repos {
		for _, a := range rs.artifacts {
			if a.Name == name {
				a.Data = data
			}
		}
	}
}

func twirpError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"code": code, "msg": msg})
}

func (s *Server) serveTwirp(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, twirpPrefix)
	if !ok || r.Method != http.MethodPost {
		twirpError(w, http.StatusNotFound, "bad_route", "no handler for "+r.URL.Path)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		twirpError(w, http.StatusBadRequest, "malformed", "content-type "+ct)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.twirpIdentity(r.Header.Get("Authorization"))
	if !ok {
		twirpError(w, http.StatusUnauthorized, "unauthenticated", "bad runtime token")
		return
	}
	raw, err := readBody(r, 1<<20)
	if err != nil {
		twirpError(w, http.StatusBadRequest, "malformed", err.Error())
		return
	}
	var req map[string]any
	if err := strictjson.Decode(raw, &req); err != nil {
		twirpError(w, http.StatusBadRequest, "malformed", err.Error())
		return
	}
	c := twirpCall{req: req, camel: s.CamelCase, id: id}
	if c.str("workflow_run_backend_id") != id.runBackend || c.str("workflow_job_run_backend_id") != id.jobBackend {
		twirpError(w, http.StatusBadRequest, "invalid_argument", "backend ids do not match the token")
		return
	}
	serve := twirpMethods[method]
	if serve == nil {
		twirpError(w, http.StatusNotFound, "bad_route", "no method "+method)
		return
	}
	serve(s, w, c)
}

// twirpCall is one decoded Twirp request. Responses name their members in
// snake_case, or in camelCase with int64 values as strings (protojson's
// encoding) when the server's CamelCase is set.
type twirpCall struct {
	req   map[string]any
	camel bool
	id    twirpID // who the runtime token speaks for (runs.go)
}

func (c twirpCall) str(k string) string { v, _ := c.req[k].(string); return v }

// key is the response member name k (snake_case) in the server's style.
func (c twirpCall) key(k string) string {
	if c.camel {
		parts := strings.Split(k, "_")
		for i := 1; i < len(parts); i++ {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
		return strings.Join(parts, "")
	}
	return k
}

func (c twirpCall) i64(v int64) any {
	if c.camel {
		return strconv.FormatInt(v, 10)
	}
	return v
}

// twirpMethods are the artifact service's methods the fake serves. They
// run with s.mu held.
var twirpMethods = map[string]func(s *Server, w http.ResponseWriter, c twirpCall){
	"CreateArtifact":       (*Server).createArtifact,
	"FinalizeArtifact":     (*Server).finalizeArtifact,
	"ListArtifacts":        (*Server).listArtifacts,
	"GetSignedArtifactURL": (*Server).signedArtifactURL,
}

func (s *Server) createArtifact(w http.ResponseWriter, c twirpCall) {
	name := c.str("name")
	v, _ := c.req["version"].(float64)
	if v < 4 {
		twirpError(w, http.StatusBadRequest, "invalid_argument", "version must be >= 4")
		return
	}
	if name == "" || strings.ContainsAny(name, "\":<>|*?\r\n\\/") {
		twirpError(w, http.StatusBadRequest, "invalid_argument", "invalid artifact name")
		return
	}
	if u := s.uploads[name]; u != nil && u.finalized {
		twirpError(w, http.StatusConflict, "already_exists", "artifact "+name+" already exists")
		return
	}
	u := &upload{name: name, by: c.id, key: "up-" + strconv.FormatInt(s.id(), 10)}
	s.uploads[name] = u
	writeJSON(w, http.StatusOK, map[string]any{c.key("ok"): true, c.key("signed_upload_url"): s.URL + "/blob/" + u.key + "?sig=" + s.blobSig})
}

func (s *Server) finalizeArtifact(w http.ResponseWriter, c twirpCall) {
	name := c.str("name")
	u := s.uploads[name]
	if u == nil {
		twirpError(w, http.StatusNotFound, "not_found", "no artifact "+name)
		return
	}
	size, err := strconv.ParseInt(c.str("size"), 10, 64)
	if err != nil {
		twirpError(w, http.StatusBadRequest, "invalid_argument", "size must be an int64 JSON string")
		return
	}
	data, ok := s.blobs[u.key]
	if !ok && !s.Faults.LaxFinalize {
		twirpError(w, http.StatusBadRequest, "failed_precondition", "blob not uploaded")
		return
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != size && !s.Faults.LaxFinalize {
		twirpError(w, http.StatusBadRequest, "invalid_argument", "size mismatch")
		return
	}
	if c.str("hash") != "sha256:"+hex.EncodeToString(sum[:]) && !s.Faults.LaxFinalize {
		twirpError(w, http.StatusBadRequest, "invalid_argument", "hash mismatch")
		return
	}
	s.blobs[u.key] = data
	u.finalized, u.size, u.id, u.created = true, int64(len(data)), s.id(), s.tick()
	if c.id.repo != "" {
		owner, repo, _ := strings.Cut(c.id.repo, "/")
		s.repo(owner, repo).artifacts = append(s.repo(owner, repo).artifacts,
			&Artifact{ID: u.id, Name: name, HeadSHA: c.id.headSHA, RunID: c.id.restRun, CreatedAt: u.created, Data: data})
	}
	writeJSON(w, http.StatusOK, map[string]any{c.key("ok"): true, c.key("artifact_id"): c.i64(u.id)})
}

func (s *Server) listArtifacts(w http.ResponseWriter, c twirpCall) {
	var list []any
	nameFilter, hasName := c.req["name_filter"].(string)
	idFilter, hasID := c.req["id_filter"]
	for _, u := range s.uploads {
		if !u.finalized || s.Faults.Unlisted || (hasName && u.name != nameFilter) || (hasID && fmt.Sprint(idFilter) != strconv.FormatInt(u.id, 10)) ||
			u.by.runBackend != c.id.runBackend {
			continue
		}
		size := u.size
		if s.Faults.ListedSize != nil {
			size = s.Faults.ListedSize(size)
		}
		list = append(list, map[string]any{
			c.key("workflow_run_backend_id"): u.by.runBackend, c.key("workflow_job_run_backend_id"): u.by.jobBackend,
			c.key("database_id"): strconv.FormatInt(u.id+s.Faults.ListedIDOffset, 10), c.key("name"): u.name,
			c.key("size"): strconv.FormatInt(size, 10), c.key("created_at"): u.created.Format("2006-01-02T15:04:05Z"),
		})
	}
	if list == nil {
		list = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{c.key("artifacts"): list})
}

func (s *Server) signedArtifactURL(w http.ResponseWriter, c twirpCall) {
	name := c.str("name")
	u := s.uploads[name]
	if u == nil || !u.finalized {
		twirpError(w, http.StatusNotFound, "not_found", "no artifact "+name)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{c.key("name"): name, c.key("signed_url"): s.URL + "/blob/" + u.key + "?sig=" + s.blobSig})
}

// serveBlob is the signed-URL blob store: Put Block, Put Block List (see
// blocks.go) and GET. It refuses (and fails the test on) any Authorization header:
// signed URLs are used without credentials.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request) {
	if a := r.Header.Get("Authorization"); a != "" {
		s.t.Errorf("githubtest: blob %s %s sent an Authorization header", r.Method, r.URL.Path)
		http.Error(w, "credentials sent to a signed URL", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Query().Get("sig") != s.blobSig {
		http.Error(w, "AuthenticationFailed", http.StatusForbidden)
		return
	}
	k := strings.TrimPrefix(r.URL.Path, "/blob/")
	switch r.Method {
	case http.MethodGet:
		data, ok := s.blobs[k]
		if !ok {
			http.Error(w, "BlobNotFound", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	case http.MethodPut:
		s.putBlob(w, r, k)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// WriteReviewEvent writes a pull_request_review event payload for the PR's
// current state into dir/event.json and returns its path. As on GitHub,
// review.state is lower case.
func (s *Server) WriteReviewEvent(dir, owner, repo string, n int, reviewID int64) (string, error) {
	s.mu.Lock()
	p := s.pr(owner, repo, n)
	var rv *Review
	for _, r := range p.reviews {
		if r.ID == reviewID {
			rv = r
		}
	}
	if rv == nil {
		s.mu.Unlock()
		s.t.Fatalf("githubtest: no review %d", reviewID)
	}
	rj := s.reviewJSON(owner, repo, p, rv)
	rj["state"] = strings.ToLower(rv.State)
	payload := map[string]any{
		"action": "submitted", "review": rj, "pull_request": s.prJSON(p),
		"repository": map[string]any{"full_name": owner + "/" + repo, "name": repo, "owner": map[string]any{"login": owner}},
		"sender":     userJSON(rv.User),
	}
	s.mu.Unlock()
	return writeEvent(dir, payload)
}

// WritePullRequestEvent writes a pull_request event payload (action
// "opened" unless given) for the PR's current state into dir/event.json.
func (s *Server) WritePullRequestEvent(dir, owner, repo string, n int, action string) (string, error) {
	if action == "" {
		action = "opened"
	}
	s.mu.Lock()
	p := s.pr(owner, repo, n)
	payload := map[string]any{
		"action": action, "number": n, "pull_request": s.prJSON(p),
		"repository": map[string]any{"full_name": owner + "/" + repo, "name": repo, "owner": map[string]any{"login": owner}},
		"sender":     userJSON(p.pr.Author),
	}
	s.mu.Unlock()
	return writeEvent(dir, payload)
}

func writeEvent(dir string, payload any) (string, error) {
	b, err := json.MarshalIndent(payload, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "event.json")
	return path, os.WriteFile(path, b, 0o644)
}
