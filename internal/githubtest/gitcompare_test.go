package githubtest

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A",
		"GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGitCompare: comparisons answered from a real repository have
// GitHub's shape: status and counts from the merge base, the commits of
// head not in base with their parents, the merge base's diff to head.
func TestGitCompare(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "a\n")
	write("gone.txt", "x\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "base")
	base := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "checkout", "-q", "-b", "topic")
	write("a.txt", "a2\n")
	os.Remove(filepath.Join(dir, "gone.txt"))
	write("new.txt", "n\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "topic")
	head := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "checkout", "-q", "main")
	write("b.txt", "b\n")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "main moves")
	moved := gitT(t, dir, "rev-parse", "HEAD")

	s := New(t)
	s.AddRepo("o", "r")
	s.SetGitRepo("o", "r", dir)
	get := func(b, h string) (int, map[string]any) {
		resp, err := http.Get(s.URL + "/repos/o/r/compare/" + b + "..." + h)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	code, c := get(base, head)
	if code != 200 || c["status"] != "ahead" || c["ahead_by"] != 1.0 || c["behind_by"] != 0.0 || c["merge_base_commit"].(map[string]any)["sha"] != base {
		t.Fatalf("%d %v", code, c)
	}
	cs := c["commits"].([]any)
	if len(cs) != 1 || cs[0].(map[string]any)["sha"] != head || cs[0].(map[string]any)["parents"].([]any)[0].(map[string]any)["sha"] != base {
		t.Fatalf("commits %v", cs)
	}
	st := map[string]string{}
	for _, f := range c["files"].([]any) {
		st[f.(map[string]any)["filename"].(string)] = f.(map[string]any)["status"].(string)
	}
	if len(st) != 3 || st["a.txt"] != "modified" || st["gone.txt"] != "removed" || st["new.txt"] != "added" {
		t.Fatalf("files %v", st)
	}
	if _, c := get(moved, head); c["status"] != "diverged" || c["behind_by"] != 1.0 || len(c["files"].([]any)) != 3 {
		t.Fatalf("diverged: %v", c)
	}
	if _, c := get(head, base); c["status"] != "behind" || len(c["commits"].([]any)) != 0 {
		t.Fatalf("behind: %v", c)
	}
	if code, _ := get(base, strings.Repeat("e", 40)); code != 404 {
		t.Fatalf("unknown commit: %d", code)
	}
	if code, _ := get("main", head); code != 404 {
		t.Fatalf("a ref, not a sha: %d (the fake answers full SHAs only)", code)
	}
}
