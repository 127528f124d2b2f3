package githubtest

// The endpoints approval rules read (internal/ci/review), shaped like GitHub's
// documented payloads:
//
//	GET /repos/{o}/{r}/pulls/{n}/files               paginated (per_page ≤ 100, Link
//	    headers), [{sha, filename, status, additions, deletions, changes,
//	    previous_filename?}]; GitHub lists at most 3000 files
//	GET /orgs/{org}/teams/{team_slug}                 {id, slug, name, organization}; 404 unknown
//	GET /orgs/{org}/teams/{team_slug}/memberships/{username}
//	    {url, role, state: active|pending}; 404 for an unknown team or a
//	    user who is not a member
//	GET /repos/{o}/{r}/compare/{base}...{head}        {status, ahead_by, behind_by,
//	    total_commits, merge_base_commit, commits: [{sha, parents: [{sha}]}],
//	    files: [...]}; 404 for a comparison not set
//
// Team and compare state is set from Go (AddTeam, SetTeamMember,
// AddCompare); the contents API (SetContent) serves CODEOWNERS.

import (
	"net/http"
	"strconv"
	"strings"
)

// File is a changed file of a pull request or comparison.
type File struct {
	Filename         string
	Status           string // added | removed | modified | renamed | copied | changed | unchanged
	PreviousFilename string // renames
	SHA              string // blob sha of the new version
}

// CompareCommit is a commit in a comparison, with its parents.
type CompareCommit struct {
	SHA     string
	Parents []string
}

// Compare is the answer to compare/{base}...{head}.
type Compare struct {
	Status    string // ahead | behind | diverged | identical
	AheadBy   int
	BehindBy  int
	MergeBase string
	Commits   []CompareCommit
	Files     []File
}

type team struct {
	id      int64
	members map[string]string // lower-case login → state
}

type rulesState struct {
	teams    map[string]*team   // "org/slug" lower case
	compares map[string]Compare // owner/repo + "\x00" + base...head, lower-case repo
	gitDirs  map[string]string  // lower-case owner/repo → a git repository answering the rest (gitcompare.go)
}

// AddFile appends a changed file to PR n.
func (s *Server) AddFile(owner, repo string, n int, f File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Status == "" {
		f.Status = "modified"
		if f.PreviousFilename != "" {
			f.Status = "renamed"
		}
	}
	p := s.pr(owner, repo, n)
	p.files = append(p.files, f)
}

// AddTeam makes team org/slug exist (with no members).
func (s *Server) AddTeam(org, slug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.team(org, slug)
}

func (s *Server) team(org, slug string) *team {
	if s.rules.teams == nil {
		s.rules.teams = map[string]*team{}
	}
	k := strings.ToLower(org + "/" + slug)
	t := s.rules.teams[k]
	if t == nil {
		t = &team{id: s.id(), members: map[string]string{}}
		s.rules.teams[k] = t
	}
	return t
}

// SetTeamMember sets login's membership state in org/slug ("active",
// "pending"); "" removes the membership.
func (s *Server) SetTeamMember(org, slug, login, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.team(org, slug)
	if state == "" {
		delete(t.members, strings.ToLower(login))
		return
	}
	t.members[strings.ToLower(login)] = state
}

// AddCompare sets the answer to compare/{base}...{head} in owner/repo.
func (s *Server) AddCompare(owner, repo, base, head string, c Compare) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rules.compares == nil {
		s.rules.compares = map[string]Compare{}
	}
	s.rules.compares[strings.ToLower(owner+"/"+repo)+"\x00"+base+"..."+head] = c
}

// serveRules serves the endpoints above; it reports whether it answered.
func (s *Server) serveRules(w http.ResponseWriter, r *http.Request, path string) bool {
	if r.Method != http.MethodGet {
		return false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 4 && parts[0] == "orgs" && parts[2] == "teams":
		s.mu.Lock()
		defer s.mu.Unlock()
		s.serveTeam(w, parts)
		return true
	case len(parts) == 6 && parts[0] == "repos" && parts[3] == "pulls" && parts[5] == "files":
		s.mu.Lock()
		defer s.mu.Unlock()
		s.serveFiles(w, r, parts)
		return true
	case len(parts) == 5 && parts[0] == "repos" && parts[3] == "compare":
		s.mu.Lock()
		defer s.mu.Unlock()
		c, ok := s.rules.compares[strings.ToLower(parts[1]+"/"+parts[2])+"\x00"+parts[4]]
		if dir := s.rules.gitDirs[strings.ToLower(parts[1]+"/"+parts[2])]; !ok && dir != "" {
			if base, head, cut := strings.Cut(parts[4], "..."); cut {
				c, ok = gitCompare(dir, base, head)
			}
		}
		if !ok {
			notFound(w)
			return true
		}
		writeJSON(w, http.StatusOK, compareJSON(c))
		return true
	}
	return false
}

func (s *Server) serveTeam(w http.ResponseWriter, parts []string) {
	t := s.rules.teams[strings.ToLower(parts[1]+"/"+parts[3])]
	switch {
	case t == nil:
		notFound(w)
	case len(parts) == 4:
		writeJSON(w, http.StatusOK, map[string]any{"id": t.id, "slug": parts[3], "name": parts[3],
			"organization": map[string]any{"login": parts[1]}})
	case len(parts) == 6 && parts[4] == "memberships":
		state, ok := t.members[strings.ToLower(parts[5])]
		if !ok {
			notFound(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"url": s.URL + "/" + strings.Join(parts, "/"), "role": "member", "state": state})
	default:
		notFound(w)
	}
}

func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request, parts []string) {
	rs := s.repos[strings.ToLower(parts[1]+"/"+parts[2])]
	n, err := strconv.Atoi(parts[4])
	if rs == nil || err != nil || rs.prs[n] == nil {
		notFound(w)
		return
	}
	var items []any
	for i, f := range rs.prs[n].files {
		if i >= 3000 { // GitHub lists at most 3000 files
			break
		}
		items = append(items, fileJSON(f))
	}
	s.paginate(w, r, items)
}

func fileJSON(f File) map[string]any {
	m := map[string]any{"sha": f.SHA, "filename": f.Filename, "status": f.Status, "additions": 1, "deletions": 0, "changes": 1}
	if f.PreviousFilename != "" {
		m["previous_filename"] = f.PreviousFilename
	}
	return m
}

func compareJSON(c Compare) map[string]any {
	commits := make([]any, 0, len(c.Commits))
	for _, cm := range c.Commits {
		ps := make([]any, 0, len(cm.Parents))
		for _, p := range cm.Parents {
			ps = append(ps, map[string]any{"sha": p})
		}
		commits = append(commits, map[string]any{"sha": cm.SHA, "parents": ps, "commit": map[string]any{"message": "commit " + cm.SHA}})
	}
	files := make([]any, 0, len(c.Files))
	for _, f := range c.Files {
		files = append(files, fileJSON(f))
	}
	return map[string]any{"status": c.Status, "ahead_by": c.AheadBy, "behind_by": c.BehindBy,
		"total_commits": len(c.Commits), "merge_base_commit": map[string]any{"sha": c.MergeBase},
		"commits": commits, "files": files}
}

func labelsJSON(ls []string) []any {
	out := make([]any, 0, len(ls))
	for i, l := range ls {
		out = append(out, map[string]any{"id": i + 1, "name": l, "color": "ededed"})
	}
	return out
}
