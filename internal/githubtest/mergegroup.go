package githubtest

// MergeGroup is a merge queue entry for WriteMergeGroupEvent.
type MergeGroup struct {
	HeadSHA, BaseSHA, Tree string
	BaseBranch             string // "main"
	// PR is the pull request the entry came from; 0 writes a head_ref
	// without one. HeadRef, when set, is written instead.
	PR      int
	HeadRef string
}

// WriteMergeGroupEvent writes a merge_group (checks_requested) payload as
// GitHub's webhook documentation shapes it: merge_group {head_sha,
// head_ref, base_sha, base_ref, head_commit {id, tree_id, message,
// timestamp, author, committer}}, repository, sender.
func (s *Server) WriteMergeGroupEvent(dir, owner, repo string, g MergeGroup) (string, error) {
	ref := g.HeadRef
	if ref == "" {
		ref = "refs/heads/gh-readonly-queue/" + g.BaseBranch + "/"
		if g.PR != 0 {
			ref += "pr-" + itoa(g.PR) + "-" + g.BaseSHA
		} else {
			ref += "manual-" + g.BaseSHA
		}
	}
	person := map[string]any{"name": "GitHub", "email": "noreply@github.com"}
	payload := map[string]any{
		"action": "checks_requested",
		"merge_group": map[string]any{
			"head_sha": g.HeadSHA, "head_ref": ref, "base_sha": g.BaseSHA, "base_ref": "refs/heads/" + g.BaseBranch,
			"head_commit": map[string]any{"id": g.HeadSHA, "tree_id": g.Tree, "message": "Merge pull request",
				"timestamp": "2025-01-02T03:04:05Z", "author": person, "committer": person},
		},
		"repository": map[string]any{"full_name": owner + "/" + repo, "name": repo, "owner": map[string]any{"login": owner}, "default_branch": g.BaseBranch},
		"sender":     map[string]any{"login": "github-merge-queue[bot]", "id": 118344674, "type": "Bot"},
	}
	return writeEvent(dir, payload)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// ClosePR closes a pull request without merging it.
func (s *Server) ClosePR(owner, repo string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pr(owner, repo, n).pr.State = "closed"
}
