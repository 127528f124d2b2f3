package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/proofgate/proofgate/internal/strictjson"
)

// Status is a commit status as POST /repos/{o}/{r}/statuses/{sha} created
// it (GitHub's documented body: state required, one of error, failure,
// pending, success; target_url, description, context optional; context
// defaults to "default"; a description over 140 characters answers 422).
type Status struct {
	SHA, State, TargetURL, Description, Context string
	CreatedAt                                   time.Time
}

// CheckRun is a check run as POST /repos/{o}/{r}/check-runs created it
// (name and head_sha required; status queued, in_progress, completed,
// waiting, requested or pending; conclusion required when completed, one
// of action_required, cancelled, failure, neutral, success, skipped,
// stale, timed_out; output needs title and summary).
type CheckRun struct {
	Name, HeadSHA, Status, Conclusion, DetailsURL string
	Title, Summary                                string
}

// maxStatusDescription is GitHub's limit on a status description.
const maxStatusDescription = 140

// Deny makes POSTs needing permission ("statuses", "checks" or
// "attestations") answer 403
// as GitHub answers a token without it.
func (s *Server) Deny(permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.denied == nil {
		s.denied = map[string]bool{}
	}
	s.denied[permission] = true
}

// Statuses returns the statuses created on sha in owner/repo, oldest first.
func (s *Server) Statuses(owner, repo, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, st := range s.statuses[strings.ToLower(owner+"/"+repo)] {
		if st.SHA == sha {
			out = append(out, st)
		}
	}
	return out
}

// CheckRuns returns the check runs created for sha in owner/repo.
func (s *Server) CheckRuns(owner, repo, sha string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.checkRuns[strings.ToLower(owner+"/"+repo)] {
		if c.HeadSHA == sha {
			out = append(out, c)
		}
	}
	return out
}

func unprocessable(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed: " + msg, "documentation_url": "https://docs.github.com/rest"})
}

// servePost serves the POST endpoints: statuses/{sha}, check-runs and
// attestations.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request, parts []string) {
	if len(parts) < 4 || parts[0] != "repos" {
		notFound(w)
		return
	}
	key := strings.ToLower(parts[1] + "/" + parts[2])
	raw, err := readBody(r, maxAttestation)
	if err != nil {
		unprocessable(w, err.Error())
		return
	}
	var body map[string]json.RawMessage
	if err := strictjson.Decode(raw, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repos[key] == nil {
		notFound(w)
		return
	}
	rest := parts[3:]
	switch {
	case len(rest) == 2 && rest[0] == "statuses":
		s.createStatus(w, key, rest[1], body)
	case len(rest) == 1 && rest[0] == "check-runs":
		s.createCheckRun(w, key, body)
	case len(rest) == 1 && rest[0] == "attestations":
		s.createAttestation(w, key, body)
	default:
		notFound(w)
	}
}

func str(body map[string]json.RawMessage, k string) (string, bool, error) {
	v, ok := body[k]
	if !ok || string(v) == "null" {
		return "", false, nil
	}
	var s string
	if err := strictjson.Decode(v, &s); err != nil {
		return "", true, fmt.Errorf("%s is not a string", k)
	}
	return s, true, nil
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (s *Server) createStatus(w http.ResponseWriter, key, sha string, body map[string]json.RawMessage) {
	if s.denied["statuses"] {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
		return
	}
	for k := range body {
		switch k {
		case "state", "target_url", "description", "context":
		default:
			unprocessable(w, "unknown field "+k)
			return
		}
	}
	st := Status{SHA: sha, Context: "default", CreatedAt: s.tick()}
	var err error
	var ok bool
	if st.State, ok, err = str(body, "state"); err != nil || !ok {
		unprocessable(w, "state is required")
		return
	}
	switch st.State {
	case "error", "failure", "pending", "success":
	default:
		unprocessable(w, "state "+st.State+" is not included in the list")
		return
	}
	if !isSHA(sha) {
		unprocessable(w, "No commit found for SHA: "+sha)
		return
	}
	st.TargetURL, _, _ = str(body, "target_url")
	st.Description, _, _ = str(body, "description")
	if c, ok, _ := str(body, "context"); ok {
		st.Context = c
	}
	if utf8.RuneCountInString(st.Description) > maxStatusDescription {
		unprocessable(w, "description is too long (maximum is 140 characters)")
		return
	}
	if s.statuses == nil {
		s.statuses = map[string][]Status{}
	}
	s.statuses[key] = append(s.statuses[key], st)
	writeJSON(w, http.StatusCreated, map[string]any{"id": s.id(), "state": st.State, "description": st.Description,
		"target_url": st.TargetURL, "context": st.Context, "created_at": st.CreatedAt.Format(time.RFC3339)})
}

func (s *Server) createCheckRun(w http.ResponseWriter, key string, body map[string]json.RawMessage) {
	if s.denied["checks"] {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
		return
	}
	var c CheckRun
	var ok bool
	c.Name, ok, _ = str(body, "name")
	if !ok || c.Name == "" {
		unprocessable(w, "name is required")
		return
	}
	if c.HeadSHA, ok, _ = str(body, "head_sha"); !ok || !isSHA(c.HeadSHA) {
		unprocessable(w, "head_sha is required and must be a commit SHA")
		return
	}
	c.Status, _, _ = str(body, "status")
	c.Conclusion, _, _ = str(body, "conclusion")
	c.DetailsURL, _, _ = str(body, "details_url")
	switch c.Status {
	case "":
		c.Status = "queued"
	case "queued", "in_progress", "completed", "waiting", "requested", "pending":
	default:
		unprocessable(w, "status "+c.Status+" is not included in the list")
		return
	}
	switch c.Conclusion {
	case "":
		if c.Status == "completed" {
			unprocessable(w, "conclusion is required when status is completed")
			return
		}
	case "action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out":
	default:
		unprocessable(w, "conclusion "+c.Conclusion+" is not included in the list")
		return
	}
	if v, ok := body["output"]; ok {
		var out struct {
			Title   *string `json:"title"`
			Summary *string `json:"summary"`
		}
		if err := strictjson.DecodeOpen(v, &out); err != nil || out.Title == nil || out.Summary == nil || len(*out.Summary) > 65535 {
			unprocessable(w, "output needs title and summary (summary at most 65535 characters)")
			return
		}
		c.Title, c.Summary = *out.Title, *out.Summary
	}
	if s.checkRuns == nil {
		s.checkRuns = map[string][]CheckRun{}
	}
	s.checkRuns[key] = append(s.checkRuns[key], c)
	writeJSON(w, http.StatusCreated, map[string]any{"id": s.id(), "name": c.Name, "head_sha": c.HeadSHA, "status": c.Status, "conclusion": c.Conclusion})
}

func headRepoID(a *Artifact) int64 {
	if a.HeadRepositoryID == 0 {
		return 1
	}
	return a.HeadRepositoryID
}
