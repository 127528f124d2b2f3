package githubtest

// Comparisons answered from a real git repository. With SetGitRepo, a
// compare/{base}...{head} request that AddCompare did not set is computed
// the way GitHub documents it: the merge base of base and head; status
// identical, ahead, behind or diverged with ahead_by and behind_by counted
// from it; commits are those reachable from head and not from base,
// oldest first, each with its parents; files are the changes from the
// merge base to head (status added, removed, modified or changed; sha the
// new blob, the old one for a removed file), renames not detected. Only
// full commit SHAs are answered this way (a branch name is a 404).

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// SetGitRepo answers owner/repo's comparisons from the git repository in
// dir.
func (s *Server) SetGitRepo(owner, repo, dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rules.gitDirs == nil {
		s.rules.gitDirs = map[string]string{}
	}
	s.rules.gitDirs[strings.ToLower(owner+"/"+repo)] = dir
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %v: %w", args, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func isHexSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	_, err := strconv.ParseUint(s[:8], 16, 32)
	return err == nil && strings.Trim(s, "0123456789abcdef") == ""
}

// gitCompare computes base...head in dir; ok is false when either is not
// a commit of dir.
func gitCompare(dir, base, head string) (Compare, bool) {
	if !isHexSHA(base) || !isHexSHA(head) {
		return Compare{}, false
	}
	mb, err := gitOut(dir, "merge-base", base, head)
	if err != nil {
		return Compare{}, false
	}
	count := func(from, to string) int {
		n, _ := gitOut(dir, "rev-list", "--count", from+".."+to)
		v, _ := strconv.Atoi(n)
		return v
	}
	c := Compare{MergeBase: mb, AheadBy: count(mb, head), BehindBy: count(mb, base)}
	switch {
	case c.AheadBy == 0 && c.BehindBy == 0:
		c.Status = "identical"
	case c.BehindBy == 0:
		c.Status = "ahead"
	case c.AheadBy == 0:
		c.Status = "behind"
	default:
		c.Status = "diverged"
	}
	revs, _ := gitOut(dir, "rev-list", "--reverse", "--topo-order", "--parents", base+".."+head)
	for _, l := range strings.Split(revs, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			c.Commits = append(c.Commits, CompareCommit{SHA: f[0], Parents: f[1:]})
		}
	}
	raw, _ := gitOut(dir, "diff-tree", "-r", "--no-renames", mb, head)
	for _, l := range strings.Split(raw, "\n") {
		meta, path, ok := strings.Cut(l, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 5 {
			continue
		}
		file := File{Filename: path, SHA: f[3]}
		switch f[4] {
		case "A":
			file.Status = "added"
		case "D":
			file.Status, file.SHA = "removed", f[2]
		case "M":
			file.Status = "modified"
		default:
			file.Status = "changed"
		}
		c.Files = append(c.Files, file)
	}
	return c, true
}
