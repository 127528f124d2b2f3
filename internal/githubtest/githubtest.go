// Package githubtest is a fake GitHub for tests: an httptest.Server that
// implements exactly the REST endpoints and the Actions artifact (v4 Twirp +
// blob) service ProofGate uses, with payloads shaped like GitHub's
// documentation. State is set from Go; failures (429/5xx with Retry-After) and
// a moving PR head can be injected.
//
// REST paths are served both at the root and under /api/v3 (GitHub Enterprise
// Server layout), so clients built for either work.
package githubtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// User is a GitHub account. Type is "User" (default) or "Bot".
type User struct {
	Login string
	ID    int64
	Type  string
}

// PR is a pull request. HeadRepo/BaseRepo are "owner/name"; empty means the
// repository the PR is added to.
type PR struct {
	Number   int
	Author   User
	State    string // default "open"
	HeadSHA  string
	HeadRef  string
	HeadRepo string
	BaseSHA  string
	BaseRef  string
	BaseRepo string
	// MergeCommitSHA, when set, makes the PR closed and merged into that
	// commit (merged_at set, merge_commit_sha), as GitHub shows a merged PR.
	MergeCommitSHA string
	Title          string
	Labels         []string
}

// Review is a pull-request review. State is upper case as in REST
// (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING).
type Review struct {
	ID          int64 // 0 = assigned
	User        User
	State       string
	CommitID    string
	SubmittedAt time.Time // zero = assigned (increasing)
	Body        string
	// Extra members are added to the review's JSON (a hostile payload: a
	// case variant such as "State" beside "state").
	Extra map[string]any
	// Raw, when set, is served instead of the review's JSON (a hostile
	// payload a Go map cannot express, such as a duplicate "state").
	Raw json.RawMessage
}

// Commit is a commit of a pull request. Author/Committer are the linked
// GitHub accounts (nil when the e-mail is not linked to an account).
type Commit struct {
	SHA       string
	Author    *User
	Committer *User
	Message   string
}

// Artifact is a workflow-run artifact listed by the REST API.
type Artifact struct {
	ID        int64 // 0 = assigned
	Name      string
	HeadSHA   string
	RunID     int64
	Expired   bool
	CreatedAt time.Time // zero = assigned (increasing)
	Data      []byte    // the zip served by /zip
	// HeadRepositoryID is the workflow run's head repository id; 0 = the
	// repository itself (id 1). Another id is a fork's pull-request run.
	HeadRepositoryID int64
}

// Permission is a collaborator's permission answer.
type Permission struct {
	Permission string // admin | write | read | none
	RoleName   string // admin | maintain | write | triage | read | custom
}

// Request is one request the fake received.
type Request struct {
	Method, Path, RawQuery, Authorization string
}

type repoState struct {
	prs       map[int]*prState
	perms     map[string]Permission // lower-case login
	contents  map[string][]byte     // ref + "\x00" + path
	artifacts []*Artifact
}

type prState struct {
	pr       PR
	files    []File
	reviews  []*Review
	commits  []Commit
	gets     int
	moveAt   int
	moveTo   string
	hasMoved bool
}

type failure struct {
	match      string
	status     int
	retryAfter string
	remaining  int // < 0 forever
}

// Server is the fake. Create it with New.
type Server struct {
	*httptest.Server
	t testing.TB

	// Token, when set, is the only REST token accepted ("Bearer" or "token").
	Token string
	// CamelCase makes Twirp responses use lowerCamelCase JSON names and int64
	// values as JSON strings (protojson's default), instead of snake_case.
	CamelCase bool
	// Faults makes the artifact service misbehave (see ArtifactFaults).
	Faults ArtifactFaults

	mu       sync.Mutex
	rules    rulesState // teams and comparisons (rules.go)
	repos    map[string]*repoState
	fails    []*failure
	requests []Request
	nextID   int64
	clock    time.Time

	// artifact service
	runtimeToken string
	runID, jobID string
	runRepo      string
	runHeadSHA   string
	uploads      map[string]*upload // by name
	jobTokens    map[string]twirpID // JobRuntimeToken's tokens (runs.go)
	runs         map[string]map[int64]bool
	blobs        map[string][]byte // key -> committed bytes
	blocks       map[string]map[string][]byte
	blobSig      string

	// statuses and check runs created (statuses.go), by repository
	statuses  map[string][]Status
	checkRuns map[string][]CheckRun
	denied    map[string]bool

	// artifact attestations (attestations.go), by repository
	attestations    map[string][]Attestation
	nextAttestation int64
}

type upload struct {
	name      string
	by        twirpID // the token's identity that created it
	key       string
	finalized bool
	id        int64
	size      int64
	created   time.Time
}

// New starts a fake GitHub and closes it when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		t:       t,
		repos:   map[string]*repoState{},
		nextID:  1000,
		clock:   time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		uploads: map[string]*upload{},
		blobs:   map[string][]byte{},
		blocks:  map[string]map[string][]byte{},
		blobSig: "sig-" + strconv.FormatInt(time.Now().UnixNano(), 36),
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) repo(owner, name string) *repoState {
	k := strings.ToLower(owner + "/" + name)
	r := s.repos[k]
	if r == nil {
		r = &repoState{prs: map[int]*prState{}, perms: map[string]Permission{}, contents: map[string][]byte{}}
		s.repos[k] = r
	}
	return r
}

func (s *Server) id() int64 { s.nextID++; return s.nextID }

// tick returns the next server time: now, as GitHub stamps created_at
// with its own clock (a bundle's signer cannot choose it), kept strictly
// increasing at the one-second precision GitHub reports.
func (s *Server) tick() time.Time {
	now := time.Now().UTC().Truncate(time.Second)
	if !now.After(s.clock) {
		now = s.clock.Add(time.Second)
	}
	s.clock = now
	return now
}

// AddRepo makes an empty repository exist (unknown repositories answer 404).
func (s *Server) AddRepo(owner, repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, repo)
}

// AddPR adds (or replaces) a pull request.
func (s *Server) AddPR(owner, repo string, pr PR) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr.State == "" {
		pr.State = "open"
	}
	if pr.HeadRepo == "" {
		pr.HeadRepo = owner + "/" + repo
	}
	if pr.BaseRepo == "" {
		pr.BaseRepo = owner + "/" + repo
	}
	if pr.BaseRef == "" {
		pr.BaseRef = "main"
	}
	if pr.HeadRef == "" {
		pr.HeadRef = "topic"
	}
	s.repo(owner, repo).prs[pr.Number] = &prState{pr: pr}
}

// MergePR marks PR n merged into mergeCommit (closed, merged_at,
// merge_commit_sha), as GitHub shows it once merged.
func (s *Server) MergePR(owner, repo string, n int, mergeCommit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pr(owner, repo, n).pr.MergeCommitSHA = mergeCommit
}

func (s *Server) pr(owner, repo string, n int) *prState {
	p := s.repo(owner, repo).prs[n]
	if p == nil {
		s.t.Fatalf("githubtest: no PR %s/%s#%d", owner, repo, n)
	}
	return p
}

// AddReview appends a review (chronological) and returns its id.
func (s *Server) AddReview(owner, repo string, n int, r Review) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pr(owner, repo, n)
	if r.ID == 0 {
		r.ID = s.id()
	}
	if r.SubmittedAt.IsZero() && r.State != "PENDING" {
		r.SubmittedAt = s.tick()
	}
	p.reviews = append(p.reviews, &r)
	return r.ID
}

// DismissReview sets a review's state to DISMISSED, as GitHub does.
func (s *Server) DismissReview(owner, repo string, n int, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.pr(owner, repo, n).reviews {
		if r.ID == id {
			r.State = "DISMISSED"
			return
		}
	}
	s.t.Fatalf("githubtest: no review %d", id)
}

// AddCommit appends a commit to a PR.
func (s *Server) AddCommit(owner, repo string, n int, c Commit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pr(owner, repo, n)
	p.commits = append(p.commits, c)
}

// SetHead moves a PR's head now.
func (s *Server) SetHead(owner, repo string, n int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pr(owner, repo, n).pr.HeadSHA = sha
}

// MoveHeadAfter moves a PR's head to sha once GET /pulls/{n} has been
// answered `calls` times (the next GET sees the new head).
func (s *Server) MoveHeadAfter(owner, repo string, n, calls int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pr(owner, repo, n)
	p.moveAt, p.moveTo, p.hasMoved = calls, sha, false
}

// SetPermission sets a user's collaborator permission.
func (s *Server) SetPermission(owner, repo, login string, p Permission) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, repo).perms[strings.ToLower(login)] = p
}

// SetContent stores a file at ref for the contents API.
func (s *Server) SetContent(owner, repo, ref, path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, repo).contents[ref+"\x00"+path] = data
}

// AddArtifact lists an artifact for the REST API and returns its id.
func (s *Server) AddArtifact(owner, repo string, a Artifact) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.ID == 0 {
		a.ID = s.id()
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.tick()
	}
	if a.RunID == 0 {
		a.RunID = s.id()
	}
	s.repo(owner, repo).artifacts = append(s.repo(owner, repo).artifacts, &a)
	return a.ID
}

// Fail makes the next `times` requests whose path contains match (""
// matches all) answer status, with Retry-After when retryAfter != "".
// times < 0 fails forever.
func (s *Server) Fail(match string, status int, retryAfter string, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, &failure{match, status, retryAfter, times})
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests had a path containing sub.
func (s *Server) Count(method, sub string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && strings.Contains(r.Path, sub) {
			n++
		}
	}
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.injectFailure(w, r) {
		return
	}
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/twirp/"):
		s.serveTwirp(w, r)
		return
	case strings.HasPrefix(path, "/blob/"):
		s.serveBlob(w, r)
		return
	}
	path = strings.TrimPrefix(path, "/api/v3")
	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	if s.serveRules(w, r, path) {
		return
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if r.Method == http.MethodPost {
		s.servePost(w, r, parts)
		return
	}
	if len(parts) < 4 || parts[0] != "repos" || r.Method != http.MethodGet {
		notFound(w)
		return
	}
	q := repoRequest{owner: parts[1], name: parts[2], rest: parts[3:]}
	s.mu.Lock()
	defer s.mu.Unlock()
	q.rs = s.repos[strings.ToLower(q.owner+"/"+q.name)]
	if q.rs == nil {
		notFound(w)
		return
	}
	for _, rt := range repoRoutes {
		if matchPath(rt.pattern, q.rest) {
			rt.serve(s, w, r, q)
			return
		}
	}
	notFound(w)
}

// injectFailure records the request and answers it with an injected
// failure (see Fail) when one matches.
func (s *Server) injectFailure(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	s.requests = append(s.requests, Request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization")})
	for _, f := range s.fails {
		if f.remaining != 0 && strings.Contains(r.URL.Path, f.match) {
			if f.remaining > 0 {
				f.remaining--
			}
			s.mu.Unlock()
			if f.retryAfter != "" {
				w.Header().Set("Retry-After", f.retryAfter)
			}
			writeJSON(w, f.status, map[string]string{"message": "injected failure", "documentation_url": "https://docs.github.com/rest"})
			return true
		}
	}
	s.mu.Unlock()
	return false
}

// repoRequest is a GET under /repos/{owner}/{name}/; rest is the path
// after the repository. The handlers run with s.mu held.
type repoRequest struct {
	owner, name string
	rs          *repoState
	rest        []string
}

// repoRoutes are the REST endpoints the fake serves under a repository,
// matched in order on the path after it (see matchPath).
var repoRoutes = []struct {
	pattern string
	serve   func(s *Server, w http.ResponseWriter, r *http.Request, q repoRequest)
}{
	{"pulls/...", (*Server).servePulls},
	{"commits/*/pulls", (*Server).serveCommitPulls},
	{"collaborators/*/permission", (*Server).servePermission},
	{"contents/...", (*Server).serveContents},
	{"actions/artifacts", (*Server).serveArtifacts},
	{"actions/artifacts/*/zip", (*Server).serveArtifactZip},
	{"actions/runs/*/artifacts", (*Server).serveRunArtifacts},
	{"attestations/*", (*Server).serveAttestations},
}

// matchPath reports whether the segments rest match pattern: segments
// separated by "/", where "*" matches any one segment and a final "..."
// one or more.
func matchPath(pattern string, rest []string) bool {
	pat := strings.Split(pattern, "/")
	if pat[len(pat)-1] == "..." {
		pat = pat[:len(pat)-1]
		if len(rest) <= len(pat) {
			return false
		}
		rest = rest[:len(pat)]
	} else if len(rest) != len(pat) {
		return false
	}
	for i, p := range pat {
		if p != "*" && p != rest[i] {
			return false
		}
	}
	return true
}

// servePulls serves pulls/{n}, pulls/{n}/reviews and pulls/{n}/commits.
func (s *Server) servePulls(w http.ResponseWriter, r *http.Request, q repoRequest) {
	rest := q.rest
	n, err := strconv.Atoi(rest[1])
	p := q.rs.prs[n]
	if err != nil || p == nil {
		notFound(w)
		return
	}
	switch {
	case len(rest) == 2:
		s.servePR(w, r, p)
	case len(rest) == 3 && rest[2] == "reviews":
		items := make([]any, 0, len(p.reviews))
		for _, rv := range p.reviews {
			if rv.Raw != nil {
				items = append(items, rv.Raw)
				continue
			}
			items = append(items, s.reviewJSON(q.owner, q.name, p, rv))
		}
		s.paginate(w, r, items)
	case len(rest) == 3 && rest[2] == "commits":
		items := make([]any, 0, len(p.commits))
		for _, c := range p.commits {
			items = append(items, commitJSON(c))
		}
		// GitHub lists at most 250 commits of a PR.
		if len(items) > 250 {
			items = items[:250]
		}
		s.paginate(w, r, items)
	default:
		notFound(w)
	}
}

// serveCommitPulls serves commits/{sha}/pulls: the PRs whose head, merge
// commit or commits include sha.
func (s *Server) serveCommitPulls(w http.ResponseWriter, r *http.Request, q repoRequest) {
	sha := q.rest[1]
	var items []any
	nums := make([]int, 0, len(q.rs.prs))
	for n := range q.rs.prs {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		p := q.rs.prs[n]
		if p.pr.HeadSHA == sha || p.pr.MergeCommitSHA == sha || containsCommit(p.commits, sha) {
			items = append(items, s.prJSON(p))
		}
	}
	s.paginate(w, r, items)
}

// servePermission serves collaborators/{login}/permission.
func (s *Server) servePermission(w http.ResponseWriter, _ *http.Request, q repoRequest) {
	login := q.rest[1]
	perm, ok := q.rs.perms[strings.ToLower(login)]
	if !ok {
		perm = Permission{Permission: "none"}
	}
	u := s.userByLogin(q.rs, login)
	body := map[string]any{"permission": perm.Permission, "user": userJSON(u)}
	if perm.RoleName != "" {
		body["role_name"] = perm.RoleName
	}
	writeJSON(w, http.StatusOK, body)
}

// serveContents serves contents/{path}?ref=, base64 in 60-column lines as
// GitHub sends it.
func (s *Server) serveContents(w http.ResponseWriter, r *http.Request, q repoRequest) {
	p := strings.Join(q.rest[1:], "/")
	ref := r.URL.Query().Get("ref")
	data, ok := q.rs.contents[ref+"\x00"+p]
	if !ok {
		notFound(w)
		return
	}
	enc := base64.StdEncoding.EncodeToString(data)
	var lines []string
	for len(enc) > 60 {
		lines = append(lines, enc[:60])
		enc = enc[60:]
	}
	lines = append(lines, enc)
	sum := sha256.Sum256(data)
	writeJSON(w, http.StatusOK, map[string]any{
		"type": "file", "encoding": "base64", "size": len(data),
		"name": p[strings.LastIndex(p, "/")+1:], "path": p,
		"content": strings.Join(lines, "\n") + "\n",
		"sha":     hex.EncodeToString(sum[:20]),
	})
}

// serveArtifacts serves actions/artifacts?name=, newest first.
func (s *Server) serveArtifacts(w http.ResponseWriter, r *http.Request, q repoRequest) {
	name := r.URL.Query().Get("name")
	arts := append([]*Artifact(nil), q.rs.artifacts...)
	sort.SliceStable(arts, func(i, j int) bool { return arts[i].CreatedAt.After(arts[j].CreatedAt) })
	var items []any
	for _, a := range arts {
		if name == "" || a.Name == name {
			items = append(items, s.artifactJSON(q.owner, q.name, a))
		}
	}
	page, links := s.page(r, items)
	if links != "" {
		w.Header().Set("Link", links)
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "artifacts": page})
}

// serveArtifactZip serves actions/artifacts/{id}/zip: a redirect to a
// signed blob URL, or 410 for an expired artifact.
func (s *Server) serveArtifactZip(w http.ResponseWriter, _ *http.Request, q repoRequest) {
	id, _ := strconv.ParseInt(q.rest[2], 10, 64)
	for _, a := range q.rs.artifacts {
		if a.ID == id {
			if a.Expired {
				writeJSON(w, http.StatusGone, map[string]string{"message": "Artifact has expired"})
				return
			}
			key := "artifact-" + strconv.FormatInt(id, 10)
			s.blobs[key] = a.Data
			w.Header().Set("Location", s.URL+"/blob/"+key+"?sig="+s.blobSig)
			w.WriteHeader(http.StatusFound)
			return
		}
	}
	notFound(w)
}

func (s *Server) authorized(r *http.Request) bool {
	if s.Token == "" {
		return true
	}
	a := r.Header.Get("Authorization")
	return a == "Bearer "+s.Token || a == "token "+s.Token
}

func containsCommit(cs []Commit, sha string) bool {
	for _, c := range cs {
		if c.SHA == sha {
			return true
		}
	}
	return false
}

func (s *Server) userByLogin(rs *repoState, login string) User {
	for _, p := range rs.prs {
		if strings.EqualFold(p.pr.Author.Login, login) {
			return p.pr.Author
		}
		for _, r := range p.reviews {
			if strings.EqualFold(r.User.Login, login) {
				return r.User
			}
		}
	}
	return User{Login: login}
}

func (s *Server) servePR(w http.ResponseWriter, _ *http.Request, p *prState) {
	p.gets++
	body := s.prJSON(p)
	if p.moveTo != "" && !p.hasMoved && p.gets >= p.moveAt {
		p.pr.HeadSHA, p.hasMoved = p.moveTo, true
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) prJSON(p *prState) map[string]any {
	repoJSON := func(full string) map[string]any {
		owner, name, _ := strings.Cut(full, "/")
		return map[string]any{"full_name": full, "name": name, "owner": map[string]any{"login": owner}}
	}
	m := map[string]any{
		"number":           p.pr.Number,
		"state":            p.pr.State,
		"user":             userJSON(p.pr.Author),
		"head":             map[string]any{"ref": p.pr.HeadRef, "sha": p.pr.HeadSHA, "repo": repoJSON(p.pr.HeadRepo), "user": userJSON(p.pr.Author)},
		"base":             map[string]any{"ref": p.pr.BaseRef, "sha": p.pr.BaseSHA, "repo": repoJSON(p.pr.BaseRepo)},
		"commits":          len(p.commits),
		"title":            p.pr.Title,
		"labels":           labelsJSON(p.pr.Labels),
		"changed_files":    len(p.files),
		"merged":           false,
		"merged_at":        nil,
		"merge_commit_sha": nil,
	}
	if p.pr.MergeCommitSHA != "" {
		m["state"], m["merged"], m["merge_commit_sha"] = "closed", true, p.pr.MergeCommitSHA
		m["merged_at"] = s.clock.UTC().Format(time.RFC3339)
	}
	return m
}

func userJSON(u User) map[string]any {
	t := u.Type
	if t == "" {
		t = "User"
	}
	return map[string]any{"login": u.Login, "id": u.ID, "type": t, "site_admin": false}
}

func (s *Server) reviewJSON(owner, repo string, p *prState, r *Review) map[string]any {
	m := map[string]any{
		"id":                 r.ID,
		"node_id":            fmt.Sprintf("PRR_%d", r.ID),
		"user":               userJSON(r.User),
		"body":               r.Body,
		"state":              r.State,
		"commit_id":          r.CommitID,
		"author_association": "COLLABORATOR",
		"html_url":           fmt.Sprintf("%s/%s/%s/pull/%d#pullrequestreview-%d", s.URL, owner, repo, p.pr.Number, r.ID),
		"pull_request_url":   fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, owner, repo, p.pr.Number),
	}
	if !r.SubmittedAt.IsZero() {
		m["submitted_at"] = r.SubmittedAt.UTC().Format(time.RFC3339)
	}
	for k, v := range r.Extra {
		m[k] = v
	}
	return m
}

func commitJSON(c Commit) map[string]any {
	var author, committer any
	if c.Author != nil {
		author = userJSON(*c.Author)
	}
	if c.Committer != nil {
		committer = userJSON(*c.Committer)
	}
	person := func(u *User) map[string]any {
		if u == nil {
			return map[string]any{"name": "Someone", "email": "someone@example.com", "date": "2025-01-01T00:00:00Z"}
		}
		return map[string]any{"name": u.Login, "email": u.Login + "@example.com", "date": "2025-01-01T00:00:00Z"}
	}
	return map[string]any{
		"sha":       c.SHA,
		"commit":    map[string]any{"message": c.Message, "author": person(c.Author), "committer": person(c.Committer)},
		"author":    author,
		"committer": committer,
	}
}

func (s *Server) artifactJSON(owner, repo string, a *Artifact) map[string]any {
	return map[string]any{
		"id": a.ID, "node_id": fmt.Sprintf("MDg6QXJ0aWZhY3Q%d", a.ID), "name": a.Name,
		"size_in_bytes":        len(a.Data),
		"url":                  fmt.Sprintf("%s/repos/%s/%s/actions/artifacts/%d", s.URL, owner, repo, a.ID),
		"archive_download_url": fmt.Sprintf("%s/repos/%s/%s/actions/artifacts/%d/zip", s.URL, owner, repo, a.ID),
		"expired":              a.Expired,
		"created_at":           a.CreatedAt.UTC().Format(time.RFC3339),
		"updated_at":           a.CreatedAt.UTC().Format(time.RFC3339),
		"expires_at":           a.CreatedAt.Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339),
		"workflow_run": map[string]any{
			"id": a.RunID, "repository_id": 1, "head_repository_id": headRepoID(a),
			"head_branch": "main", "head_sha": a.HeadSHA,
		},
	}
}

// page slices items per ?per_page (default 30, max 100) and ?page, and
// builds a Link header like GitHub's.
func (s *Server) page(r *http.Request, items []any) ([]any, string) {
	per := 30
	if v, err := strconv.Atoi(r.URL.Query().Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	pg := 1
	if v, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && v > 0 {
		pg = v
	}
	last := (len(items) + per - 1) / per
	if last == 0 {
		last = 1
	}
	lo := min((pg-1)*per, len(items))
	hi := min(lo+per, len(items))
	link := func(p int, rel string) string {
		u := *r.URL
		q := u.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		u.RawQuery = q.Encode()
		return fmt.Sprintf(`<%s%s>; rel="%s"`, s.URL, u.RequestURI(), rel)
	}
	var links []string
	if pg < last {
		links = append(links, link(pg+1, "next"), link(last, "last"))
	}
	if pg > 1 {
		links = append(links, link(1, "first"), link(pg-1, "prev"))
	}
	return items[lo:hi], strings.Join(links, ", ")
}

func (s *Server) paginate(w http.ResponseWriter, r *http.Request, items []any) {
	page, links := s.page(r, items)
	if links != "" {
		w.Header().Set("Link", links)
	}
	if page == nil {
		page = []any{}
	}
	writeJSON(w, http.StatusOK, page)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
}

func readBody(r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("body over %d bytes", limit)
	}
	return b, nil
}
