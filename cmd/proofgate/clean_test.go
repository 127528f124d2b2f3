package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/app"
)

// historyRepo makes a git repository with the given contract and files,
// committed, and changes into it.
func historyRepo(t *testing.T, contractYAML string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files[".gitignore"] = ".proofgate/runs/\nbuild/\nout/\n"
	files[".proofgate/contract.yaml"] = contractYAML
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitCommitAll(t, dir, "init")
	t.Chdir(dir)
	return dir
}

func hcli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

const cleanContract = `version: 1
name: clean
defaults: {runtime: process, timeout: 30s}
checks:
  - {id: ok, run: ['true']}
cleanup: [build, out/tmp]
`

func TestCleanDryRunApplyAndRecord(t *testing.T) {
	dir := historyRepo(t, cleanContract, map[string]string{"src/a.go": "package a\n"})
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "precious"), []byte("x"), 0o644)
	for _, p := range []string{"build/a.o", "build/sub/b.o", "out/tmp/c"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644)
	}
	os.Symlink(outside, filepath.Join(dir, "build", "escape"))

	code, out, errs := hcli("clean", "--json")
	var dry app.Cleaned
	if code != 0 || json.Unmarshal([]byte(out), &dry) != nil || dry.Applied || dry.Removed != 4 {
		t.Fatalf("dry run: %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "build", "a.o")); err != nil {
		t.Fatal("dry run removed a file")
	}
	if code, out, errs := hcli("run", "--quiet"); code != exitAwaiting {
		t.Fatalf("run: %d %s %s", code, out, errs)
	}
	code, out, errs = hcli("clean", "--apply", "--run", "latest", "--actor", "alice")
	if code != 0 || !strings.Contains(out, "removed 4 entries, recorded in run") {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
		t.Fatal("the symlink's target was removed")
	}
	if _, err := os.Lstat(filepath.Join(dir, "build", "escape")); err == nil {
		t.Fatal("the symlink stayed")
	}
	ids, _ := os.ReadDir(filepath.Join(dir, ".proofgate", "runs"))
	log, _ := os.ReadFile(filepath.Join(dir, ".proofgate", "runs", ids[0].Name(), "events.ndjson"))
	if !bytes.Contains(log, []byte(`"type":"cleanup.recorded"`)) || !bytes.Contains(log, []byte(`{"kind":"symlink","path":"build/escape"}`)) {
		t.Fatalf("log: %s", log)
	}
	// The recorded event replays: audit still reconciles.
	if code, out, errs := hcli("status", "latest", "--audit"); code != exitAwaiting {
		t.Fatalf("audit after cleanup: %d %s %s", code, out, errs)
	}
}

// A symlinked root, a root that is .git and ".." in a root: refused, the
// last two already by the contract loader (exit 2), the first at cleaning
// time (exit 1), nothing removed.
func TestCleanHostileRoots(t *testing.T) {
	dir := historyRepo(t, cleanContract, map[string]string{})
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "precious"), []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "build"))
	code, _, errs := hcli("clean", "--apply")
	if code != exitRefused || !strings.Contains(errs, "symlink-root") {
		t.Fatalf("symlinked root: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
		t.Fatal("removed outside")
	}
	for _, root := range []string{".git", "../x", "build/../.."} {
		os.WriteFile(filepath.Join(dir, ".proofgate", "contract.yaml"), []byte(strings.Replace(cleanContract, "[build, out/tmp]", "["+root+"]", 1)), 0o644)
		code, _, errs := hcli("clean", "--apply")
		if code != exitUsage || !strings.Contains(errs, "cleanup[0]") {
			t.Errorf("%s: %d %s", root, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "HEAD")); err != nil {
		t.Fatal(".git damaged")
	}
	// A state directory inside a root is refused at cleaning time.
	os.WriteFile(filepath.Join(dir, ".proofgate", "contract.yaml"), []byte(cleanContract), 0o644)
	os.Remove(filepath.Join(dir, "build"))
	os.MkdirAll(filepath.Join(dir, "build", "state"), 0o755)
	if code, _, errs := hcli("--state", "build/state", "clean", "--apply", "--contract", ".proofgate/contract.yaml"); code != exitRefused || !strings.Contains(errs, "state-directory") {
		t.Errorf("state dir in root: %d %s", code, errs)
	}
}
