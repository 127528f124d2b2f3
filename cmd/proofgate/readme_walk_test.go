package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/registrytest"
)

// readmeBlock returns the lines of the ```sh block that follows the
// "<!-- walk:NAME" marker in a Markdown document (README.md,
// docs/verify.md).
func readmeBlock(t *testing.T, readme []byte, name string) []string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(readme))
	state := 0 // 0 looking for the marker, 1 for the fence, 2 inside
	var lines []string
	for sc.Scan() {
		l := sc.Text()
		switch {
		case state == 0 && (l == "<!-- walk:"+name+" -->" || strings.HasPrefix(l, "<!-- walk:"+name+" ")):
			state = 1
		case state == 1 && l == "```sh":
			state = 2
		case state == 1 && strings.TrimSpace(l) != "":
			t.Fatalf("marker walk:%s is not followed by a ```sh block", name)
		case state == 2 && l == "```":
			return lines
		case state == 2:
			lines = append(lines, l)
		}
	}
	t.Fatalf("no ```sh block after <!-- walk:%s -->", name)
	return nil
}

// TestReadmeWalk runs the README's quick start, its local bundle steps and
// its signing-key steps verbatim, in a fresh repository holding the files
// of this work tree, and asserts that the work tree stays clean and that no
// private key is ever inside the repository. Only `bash scripts/test.sh`
// (the whole suite, this test among it) is left out of the quick start.
func TestReadmeWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI in a fresh clone")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	clone := cloneWorkTree(t)
	home := t.TempDir()
	fakeBin := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	writeExec(t, filepath.Join(fakeBin, "gh"), "#!/bin/sh\n# gh secret set NAME < FILE\n[ \"$1 $2 $3\" = \"secret set PROOFGATE_SIGNING_KEY\" ] || exit 9\ncat > "+secret+"\n")
	gocache := strings.TrimSpace(string(must(exec.Command("go", "env", "GOCACHE").Output())))
	// README: "put bin/ on your PATH (export PATH="$PWD/bin:$PATH" at the
	// repository root)".
	path := filepath.Join(clone, "bin") + ":" + fakeBin + ":" + os.Getenv("PATH")
	env := append(os.Environ(), "PATH="+path, "GOCACHE="+gocache, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")

	var quick []string
	for _, l := range readmeBlock(t, readme, "quickstart") {
		if !strings.HasPrefix(l, "bash scripts/test.sh") {
			quick = append(quick, l)
		}
	}
	walk(t, clone, env, "quickstart", quick, 3) // "exit 3 = awaiting approval"
	assertClean(t, clone, "quickstart")
	walk(t, clone, env, "quickstart-approve", readmeBlock(t, readme, "quickstart-approve"), 0)
	assertClean(t, clone, "quickstart-approve")
	walk(t, filepath.Join(clone, "examples", "quickstart"), env, "local-bundle", readmeBlock(t, readme, "local-bundle"), 0)
	assertClean(t, clone, "local-bundle")

	// The signing-key steps are for the user's own repository: one with a
	// contract in .proofgate/, here a copy of the quick start's module.
	mine := filepath.Join(t.TempDir(), "myrepo")
	copyTree(t, filepath.Join(clone, "examples", "quickstart"), mine)
	gitCommitAll(t, mine, "my repository")
	walk(t, mine, append(env, "HOME="+home), "signing-key", readmeBlock(t, readme, "signing-key"), 0)
	assertClean(t, mine, "signing-key")
	keyFile := filepath.Join(home, ".config", "proofgate", "keys", "myrepo.pem")
	pem, err := os.ReadFile(keyFile)
	if err != nil || !bytes.Contains(pem, []byte("PRIVATE KEY-----")) {
		t.Fatalf("signing key not at %s: %v", keyFile, err)
	}
	if got, err := os.ReadFile(secret); err != nil || !bytes.Equal(got, pem) {
		t.Fatalf("gh secret set did not receive the private key (%v)", err)
	}
	out := must(gitOut(mine, "ls-files", ".proofgate/trust.json"))
	if strings.TrimSpace(out) != ".proofgate/trust.json" {
		t.Fatal("the trust store was not committed")
	}

	// "Add it to your repository": a fresh Go repository.
	parent := t.TempDir()
	yours := filepath.Join(parent, "your-repository")
	copyTree(t, filepath.Join(clone, "examples", "quickstart"), yours)
	if err := os.RemoveAll(filepath.Join(yours, ".proofgate")); err != nil {
		t.Fatal(err)
	}
	gitCommitAll(t, yours, "my code")
	config := t.TempDir()
	// init --workflow pins golang:1.26 through the daemon's registry
	// mirror (CI's stand-in for Docker Hub); RELEASE_SHA is the release the
	// README's reader reviewed.
	registrytest.Mirror(t)
	walk(t, parent, append(env, "XDG_CONFIG_HOME="+config, "RELEASE_SHA="+strings.Repeat("5a", 20)), "init", readmeBlock(t, readme, "init"), 3)
	assertClean(t, yours, "init")
	if keys, _ := filepath.Glob(filepath.Join(config, "proofgate", "keys", "your-repository-*.pem")); len(keys) != 2 {
		t.Fatalf("init wrote keys %v, want a private and a public key under XDG_CONFIG_HOME", keys)
	}
}

// walk runs lines as one sh script (set -e) in dir and wants exit code code.
func walk(t *testing.T, dir string, env []string, name string, lines []string, code int) {
	t.Helper()
	script := "set -e\n" + strings.Join(lines, "\n") + "\n"
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if got != code {
		t.Fatalf("README block %s exited %d, want %d:\n%s\n--- output:\n%s", name, got, code, script, out)
	}
}

// assertClean fails when git status in the repository holding dir shows
// anything, or when a file of the repository (ignored ones included) holds
// a private key it did not hold when the repository was made (this
// repository's test vectors hold some).
func assertClean(t *testing.T, dir, after string) {
	t.Helper()
	root := strings.TrimSpace(must(gitOut(dir, "rev-parse", "--show-toplevel")))
	if st := must(gitOut(root, "status", "--porcelain", "--untracked-files=all")); st != "" {
		t.Fatalf("after README block %s the work tree is dirty:\n%s", after, st)
	}
	for _, p := range privateKeyFiles(t, root) {
		if !baselineKeys[p] {
			name, _, _ := strings.Cut(p, "\x00")
			t.Errorf("after README block %s a private key is inside the repository: %s", after, name)
		}
	}
}

// baselineKeys are the files holding a private key when a walk's
// repository was made (test vectors), with their content.
var baselineKeys = map[string]bool{}

// privateKeyFiles lists path + NUL + content of each file under root,
// .git aside, that holds a PEM private key.
func privateKeyFiles(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("PRIVATE KEY-----")) {
			found = append(found, p+"\x00"+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func gitOut(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	return string(out), err
}

// cloneWorkTree copies the tracked and untracked-but-not-ignored files of
// this work tree (edits included) into a fresh repository and commits them.
func cloneWorkTree(t *testing.T) string {
	t.Helper()
	root := strings.TrimSpace(must(gitOut(".", "rev-parse", "--show-toplevel")))
	list := must(gitOut(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"))
	clone := filepath.Join(t.TempDir(), "proofgate")
	for _, rel := range strings.Split(strings.TrimRight(list, "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or not a plain file
		}
		b := must(os.ReadFile(src))
		dst := filepath.Join(clone, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	gitCommitAll(t, clone, "clone")
	for _, p := range privateKeyFiles(t, clone) {
		baselineKeys[p] = true
	}
	return clone
}

func writeExec(t *testing.T, p, text string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}
