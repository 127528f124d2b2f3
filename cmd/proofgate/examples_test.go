package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartExample runs the README's quick start against the real
// examples/quickstart contract: it must await approval (exit 3), then
// complete on approval.
func TestQuickstartExample(t *testing.T) {
	dir, err := filepath.Abs("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	var out, errb bytes.Buffer
	// --allow-dirty: a developer's tree may hold uncommitted work; CI's
	// clean clone exercises the same path.
	code := Main([]string{"run", "--state", state, "--allow-dirty"}, &out, &errb)
	if code != exitAwaiting {
		t.Fatalf("run exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitAwaiting, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "AWAITING_APPROVAL") || !strings.Contains(errb.String(), "passed  unit") {
		t.Fatalf("unexpected output:\n%s\n%s", out.String(), errb.String())
	}
	out.Reset()
	if code := Main([]string{"approve", "latest", "--state", state, "--actor", "you"}, &out, &errb); code != exitOK {
		t.Fatalf("approve exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "COMPLETE") {
		t.Fatalf("approve: %s", out.String())
	}
}

// TestExampleContractsValidate checks every example contract through the CLI.
func TestExampleContractsValidate(t *testing.T) {
	for _, f := range []string{
		"../../examples/quickstart/.proofgate/contract.yaml",
		"../../examples/docker/contract.yaml",
		"../../examples/go-repo/contract.yaml",
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
