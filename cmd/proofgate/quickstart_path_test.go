package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartGoElsewhere runs the README's quick start with Go installed
// somewhere no contract could have guessed: a GOROOT reached only through a
// fresh temporary directory, which with git is all that PATH holds. The
// checks must pass (the contract takes PATH and HOME from the harness,
// env_from_host), and the attestation must say which PATH they ran with.
func TestQuickstartGoElsewhere(t *testing.T) {
	goroot := strings.TrimSpace(string(must(exec.Command("go", "env", "GOROOT").Output())))
	gitPath := must(exec.LookPath("git"))
	repo := t.TempDir()
	dir := filepath.Join(repo, "examples", "quickstart")
	copyTree(t, "../../examples/quickstart", dir)
	gitCommitAll(t, repo, "quickstart")

	elsewhere := t.TempDir()
	if err := os.Symlink(goroot, filepath.Join(elsewhere, "go")); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(elsewhere, "git-only")
	if err := os.Mkdir(gitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gitPath, filepath.Join(gitDir, "git")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(elsewhere, "go", "bin") + string(os.PathListSeparator) + gitDir
	t.Setenv("PATH", path)
	t.Setenv("GOROOT", "") // as on a machine that never set it

	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"run"}, &out, &errb); code != exitAwaiting {
		t.Fatalf("run exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitAwaiting, out.String(), errb.String())
	}
	for _, id := range []string{"vet", "unit"} {
		if !strings.Contains(errb.String(), "passed  "+id) {
			t.Fatalf("check %s did not pass:\n%s", id, errb.String())
		}
	}
	out.Reset()
	Main([]string{"status", "latest", "--json"}, &out, &errb)
	if !strings.Contains(out.String(), `"path": "`+path+`"`) {
		t.Fatalf("attestation does not record the harness PATH %s:\n%s", path, out.String())
	}
	if !strings.Contains(out.String(), `"env_from_host"`) || !strings.Contains(out.String(), `"HOME": "sha256:`) {
		t.Fatalf("attestation does not record env_from_host:\n%s", out.String())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
