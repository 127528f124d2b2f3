package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/testimage"
)

// runnerUID is the GitHub-hosted runner's user, as actions/cache runs tar.
const runnerUID = "1001"

// asRunner runs a shell command as the runner user with umask 022, as
// actions/cache's tar does (a non-root tar applies the umask to modes).
func asRunner(t *testing.T, script string) ([]byte, error) {
	t.Helper()
	return exec.Command("setpriv", "--reuid", runnerUID, "--regid", runnerUID, "--clear-groups",
		"sh", "-c", "umask 022; "+script).CombinedOutput()
}

func chownR(t *testing.T, owner, dir string) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", owner, dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

// TestActionsCacheComposition plays examples/workflows/proofgate-caches.yml
// on one machine: the harness (root, as the action's container) writes a
// cache; actions/cache (the runner user, uid 1001, umask 022) saves the
// scope directory with tar and restores it into a fresh cache root; the
// next run mounts it writable and its check writes into a directory the
// sandbox user created. Hostile: without the workflow's chown before the
// save, the runner user cannot read the root-owned scope directory; without
// the chown after the restore, the sandbox user cannot write the restored
// (runner-owned, 0755) tree.
func TestActionsCacheComposition(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: plays both the action container (root) and the runner user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv absent")
	}
	if ok, err := dockerCondition("docker"); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Skip("no docker daemon")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	image, err := testimage.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is 0700, and the runner user must reach
	// its "runner temp".
	tmp, err := os.MkdirTemp("", "proofgate-compose-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	os.Chmod(tmp, 0o755)
	repo := filepath.Join(tmp, "repo")
	os.MkdirAll(filepath.Join(repo, ".proofgate"), 0o755)
	contract := "version: 1\nname: compose\ncaches: {build: {mount: /cache/build}}\n" +
		"defaults: {runtime: docker, image: \"" + image + "\", workspace: none}\nchecks:\n" +
		"  - {id: w, run: [/bin/helper, write, /cache/build/d/f, \"5\"], caches: [build]}\n"
	os.WriteFile(filepath.Join(repo, ".proofgate", "contract.yaml"), []byte(contract), 0o644)
	// After the restore a check adds a file, as Go adds cache entries (the
	// restored files themselves stay the harness's, not the sandbox's).
	os.WriteFile(filepath.Join(repo, "add.yaml"), []byte(strings.Replace(contract, "d/f", "d/g", 1)), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".proofgate/runs/\n"), 0o644)
	gitCommitAll(t, repo, "compose")
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(repo); err != nil {
		t.Fatal(err)
	}

	// Run 1 on a fresh root fails (no d/ yet) but creates the cache; the
	// sandbox user's Go-like subdirectory is then made as Go would (0755).
	root := filepath.Join(tmp, "temp1", "proofgate-cache")
	goRepoRun(t, "--cache-root", root)
	d := filepath.Join(root, "local", "build", "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(d, 65534, 65534)
	if r := goRepoRun(t, "--cache-root", root); r.State != "AWAITING_APPROVAL" {
		t.Fatalf("run on the harness's own tree: %s %+v", r.State, r.Checks)
	}

	// Save, as actions/cache: refused without the chown to the runner.
	saves := filepath.Join(tmp, "saves")
	os.Mkdir(saves, 0o777)
	os.Chmod(saves, 0o777)
	save := filepath.Join(saves, "save.tar")
	os.Chmod(filepath.Dir(root), 0o755)
	if out, err := asRunner(t, "tar -C "+root+" -cf "+save+" local"); err == nil || !strings.Contains(string(out), "proofgate-cache: Cannot open: Permission denied") {
		t.Fatalf("the runner user read the root-owned scope directory (%v):\n%s", err, out)
	}
	chownR(t, runnerUID+":"+runnerUID, root)
	if out, err := asRunner(t, "tar -C "+root+" -cf "+save+" local"); err != nil {
		t.Fatalf("save after chown: %v %s", err, out)
	}

	// Restore into a new runner temp, as the runner user.
	root2 := filepath.Join(tmp, "temp2", "proofgate-cache")
	os.MkdirAll(filepath.Dir(root2), 0o777)
	os.Chmod(filepath.Dir(root2), 0o777)
	if out, err := asRunner(t, "mkdir -p "+root2+" && tar -C "+root2+" -xf "+save); err != nil {
		t.Fatalf("restore: %v %s", err, out)
	}
	// Without the chown to root the restored tree stays the runner's 0755.
	if r := goRepoRun(t, "--cache-root", root2, "--contract", "add.yaml"); r.State != "BLOCKED" || r.Checks[0].Outcome != "failed" {
		t.Fatalf("a check wrote a runner-owned 0755 tree as the sandbox user: %s %+v", r.State, r.Checks)
	}
	chownR(t, "0:0", root2)
	r := goRepoRun(t, "--cache-root", root2, "--contract", "add.yaml")
	if r.State != "AWAITING_APPROVAL" || len(r.Checks) != 1 {
		t.Fatalf("run on the restored cache: %s %+v", r.State, r.Checks)
	}
	if c := r.Checks[0].Attestation.Profile.Caches; len(c) != 1 || c[0].Provenance != "unrecorded" || c[0].Entries < 2 {
		t.Fatalf("restored cache attested as %+v, want unrecorded with the saved entries", c)
	}
	if b, err := os.ReadFile(filepath.Join(root2, "local", "build", "d", "g")); err != nil || !strings.HasPrefix(string(b), "abcde") {
		t.Fatalf("the check's write: %q %v", b, err)
	}
}
