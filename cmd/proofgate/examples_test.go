package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartExample runs the README's quick start — `proofgate run` in
// examples/quickstart, then approve — on a fresh git repository holding a
// copy of examples/quickstart at the same path (the live checkout may be
// changing under other tests, which would rightly make the run STALE).
func TestQuickstartExample(t *testing.T) {
	repo := t.TempDir()
	dir := filepath.Join(repo, "examples", "quickstart")
	copyTree(t, "../../examples/quickstart", dir)
	gitCommitAll(t, repo, "quickstart")
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main([]string{"run"}, &out, &errb)
	if code != exitAwaiting {
		t.Fatalf("run exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitAwaiting, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "AWAITING_APPROVAL") || !strings.Contains(errb.String(), "passed  unit") {
		t.Fatalf("unexpected output:\n%s\n%s", out.String(), errb.String())
	}
	out.Reset()
	if code := Main([]string{"approve", "latest", "--actor", "you"}, &out, &errb); code != exitOK {
		t.Fatalf("approve exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "COMPLETE") {
		t.Fatalf("approve: %s", out.String())
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "runs" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExampleContractsValidate checks every example contract through the CLI.
func TestExampleContractsValidate(t *testing.T) {
	for _, f := range []string{
		"../../examples/quickstart/.proofgate/contract.yaml",
		"../../examples/docker/contract.yaml",
		"../../examples/go-repo/contract.yaml",
		"../../examples/agent/.proofgate/contract.yaml",
	} {
		var out, errb bytes.Buffer
		if code := Main([]string{"contract", "check", "--contract", f, "--json"}, &out, &errb); code != exitOK {
			t.Errorf("%s: exit %d: %s", f, code, errb.String())
		}
		if !strings.Contains(out.String(), `"contract_hash": "sha256:`) {
			t.Errorf("%s: no hash in %s", f, out.String())
		}
	}
}
