package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Workflow runs with several jobs (matrix jobs and the job that needs
// them): each job gets its own ACTIONS_RUNTIME_TOKEN, all of them valid at
// once, so jobs of one run (and of other runs) can upload concurrently.
// An artifact a job finalizes is listed by the REST API under the job's
// workflow run id, for the head SHA the run was created for, as GitHub
// lists it at GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts.

// twirpID is who a runtime token speaks for: the backend ids the Twirp
// requests must carry, and where a finalized artifact is listed.
type twirpID struct {
	runBackend, jobBackend string
	repo, headSHA          string // "" repo: not listed by the REST API
	restRun                int64
}

// JobRuntimeToken returns a runtime token for job (a name unique within the
// run, e.g. "shard-2") of workflow run runID of owner/repo at headSHA. The
// token is accepted alongside every other one issued; the artifacts it
// finalizes are listed under run runID.
func (s *Server) JobRuntimeToken(owner, repo, headSHA string, runID int64, job string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := twirpID{runBackend: "run-backend-" + strconv.FormatInt(runID, 10), jobBackend: "job-backend-" + job,
		repo: owner + "/" + repo, headSHA: headSHA, restRun: runID}
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": "RS256", "x5t": "fake"})
	p, _ := json.Marshal(map[string]any{
		"scp": "Actions.ExampleScope Actions.Results:" + id.runBackend + ":" + id.jobBackend,
		"iss": "vstoken.actions.githubusercontent.com", "exp": 4102444800,
		"jti": s.URL + "/" + strconv.FormatInt(s.id(), 10),
	})
	tok := enc(h) + "." + enc(p) + "." + enc([]byte("signature"))
	if s.jobTokens == nil {
		s.jobTokens = map[string]twirpID{}
	}
	s.jobTokens[tok] = id
	s.knownRuns(id.repo)[runID] = true
	return tok
}

// AddRun makes workflow run runID of owner/repo exist (with no artifacts);
// runs are also known once a job token or an artifact names them.
func (s *Server) AddRun(owner, repo string, runID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.knownRuns(owner + "/" + repo)[runID] = true
}

func (s *Server) knownRuns(repo string) map[int64]bool {
	if s.runs == nil {
		s.runs = map[string]map[int64]bool{}
	}
	k := strings.ToLower(repo)
	if s.runs[k] == nil {
		s.runs[k] = map[int64]bool{}
	}
	return s.runs[k]
}

// twirpIdentity returns who the Authorization header's token speaks for:
// the token RuntimeToken issued last (listed as run 1 of the SetRun
// repository), or one of JobRuntimeToken's.
func (s *Server) twirpIdentity(auth string) (twirpID, bool) {
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" {
		return twirpID{}, false
	}
	if tok == s.runtimeToken {
		return twirpID{runBackend: s.runID, jobBackend: s.jobID, repo: s.runRepo, headSHA: s.runHeadSHA, restRun: 1}, true
	}
	id, ok := s.jobTokens[tok]
	return id, ok
}

// runArtifactQuery is the query GET .../actions/runs/{run_id}/artifacts
// accepts (GitHub's documented parameters); anything else is a 422.
var runArtifactQuery = map[string]bool{"per_page": true, "page": true, "name": true, "direction": true}

// serveRunArtifacts serves actions/runs/{run_id}/artifacts: the artifacts
// of that one workflow run (expired ones included, marked), filtered by an
// exact ?name=, newest first (?direction=asc: oldest first), paginated
// (per_page at most 100) with total_count the number that matched. An
// unknown or malformed run id is a 404, as on GitHub.
func (s *Server) serveRunArtifacts(w http.ResponseWriter, r *http.Request, q repoRequest) {
	runID, err := strconv.ParseInt(q.rest[2], 10, 64)
	if err != nil || runID <= 0 || strconv.FormatInt(runID, 10) != q.rest[2] {
		notFound(w)
		return
	}
	query := r.URL.Query()
	for k := range query {
		if !runArtifactQuery[k] {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "unknown parameter " + k})
			return
		}
	}
	dir := query.Get("direction")
	if dir != "" && dir != "asc" && dir != "desc" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "direction must be asc or desc"})
		return
	}
	var arts []*Artifact
	for _, a := range q.rs.artifacts {
		if a.RunID == runID {
			arts = append(arts, a)
		}
	}
	if len(arts) == 0 && !s.knownRuns(q.owner + "/" + q.name)[runID] {
		notFound(w)
		return
	}
	sort.SliceStable(arts, func(i, j int) bool {
		if dir == "asc" {
			return arts[i].CreatedAt.Before(arts[j].CreatedAt)
		}
		return arts[i].CreatedAt.After(arts[j].CreatedAt)
	})
	name := query.Get("name")
	items := []any{}
	for _, a := range arts {
		if name == "" || a.Name == name {
			items = append(items, s.artifactJSON(q.owner, q.name, a))
		}
	}
	page, links := s.page(r, items)
	if links != "" {
		w.Header().Set("Link", links)
	}
	if page == nil {
		page = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "artifacts": page})
}

// HideArtifact takes the artifacts called name out of owner/repo's REST
// listings (a shard whose upload never happened) and returns the function
// that puts them back.
func (s *Server) HideArtifact(owner, repo, name string) (restore func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repo(owner, repo)
	var kept, hidden []*Artifact
	for _, a := range rs.artifacts {
		if a.Name == name {
			hidden = append(hidden, a)
		} else {
			kept = append(kept, a)
		}
	}
	rs.artifacts = kept
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		rs.artifacts = append(rs.artifacts, hidden...)
	}
}

// ListedData returns the zip the REST API serves for the artifact called
// name listed under workflow run runID of owner/repo.
func (s *Server) ListedData(owner, repo string, runID int64, name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.repo(owner, repo).artifacts {
		if a.Name == name && a.RunID == runID {
			return a.Data, true
		}
	}
	return nil, false
}
