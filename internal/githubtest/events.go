package githubtest

import "strconv"

// DefaultBranch is the default branch every repository's event payloads
// name (repository.default_branch).
const DefaultBranch = "main"

// repositoryJSON is an event payload's repository member.
func repositoryJSON(owner, repo string) map[string]any {
	return map[string]any{"full_name": owner + "/" + repo, "name": repo, "owner": map[string]any{"login": owner},
		"default_branch": DefaultBranch}
}

// WriteIssueCommentEvent writes an issue_comment event payload (action
// "created") for a comment with body on pull request n into
// dir/event.json. As on GitHub, it names the pull request only as an
// issue: no head, no base, no commit (GITHUB_SHA is the default branch's
// head, GITHUB_REF the default branch).
func (s *Server) WriteIssueCommentEvent(dir, owner, repo string, n int, body string) (string, error) {
	s.mu.Lock()
	p := s.pr(owner, repo, n)
	api := s.URL + "/repos/" + owner + "/" + repo
	payload := map[string]any{
		"action": "created",
		"issue": map[string]any{"number": n, "user": userJSON(p.pr.Author),
			"pull_request": map[string]any{"url": api + "/pulls/" + strconv.Itoa(n)}},
		"comment":    map[string]any{"id": 9001, "body": body, "user": userJSON(p.pr.Author)},
		"repository": repositoryJSON(owner, repo),
		"sender":     userJSON(p.pr.Author),
	}
	s.mu.Unlock()
	return writeEvent(dir, payload)
}

// WriteWorkflowRunEvent writes a workflow_run event payload (action
// "completed") for a pull_request workflow run of pull request n's head
// into dir/event.json (GITHUB_SHA is the default branch's head).
func (s *Server) WriteWorkflowRunEvent(dir, owner, repo string, n int) (string, error) {
	s.mu.Lock()
	p := s.pr(owner, repo, n)
	payload := map[string]any{
		"action": "completed",
		"workflow_run": map[string]any{"id": 4242, "event": "pull_request", "conclusion": "success",
			"head_sha": p.pr.HeadSHA, "head_branch": p.pr.HeadRef,
			"pull_requests": []any{map[string]any{"number": n, "head": map[string]any{"sha": p.pr.HeadSHA}}}},
		"repository": repositoryJSON(owner, repo),
		"sender":     userJSON(p.pr.Author),
	}
	s.mu.Unlock()
	return writeEvent(dir, payload)
}

// WritePushEvent writes a push event payload of after to ref into
// dir/event.json.
func (s *Server) WritePushEvent(dir, owner, repo, ref, after string) (string, error) {
	payload := map[string]any{
		"ref": ref, "before": "0000000000000000000000000000000000000000", "after": after,
		"head_commit": map[string]any{"id": after},
		"repository":  repositoryJSON(owner, repo),
		"pusher":      map[string]any{"name": "bob"},
	}
	return writeEvent(dir, payload)
}

// WriteDispatchEvent writes a workflow_dispatch event payload for ref into
// dir/event.json (GITHUB_SHA is ref's head).
func (s *Server) WriteDispatchEvent(dir, owner, repo, ref string) (string, error) {
	payload := map[string]any{
		"ref": ref, "inputs": map[string]any{}, "workflow": ".github/workflows/proofgate.yml",
		"repository": repositoryJSON(owner, repo),
		"sender":     map[string]any{"login": "bob"},
	}
	return writeEvent(dir, payload)
}
