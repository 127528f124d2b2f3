package action

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ActionlintVersion is the actionlint scripts/test.sh installs.
const ActionlintVersion = "v1.7.12"

// actionlint finds the actionlint binary: $PROOFGATE_ACTIONLINT, PATH, or
// $(go env GOPATH)/bin. Without one the test skips, unless
// PROOFGATE_REQUIRE_ACTIONLINT=1 (scripts/test.sh sets it after installing
// it), when it fails.
func actionlint(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROOFGATE_ACTIONLINT"); p != "" {
		return p
	}
	if p, err := exec.LookPath("actionlint"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(string(trimNL(out)), "bin", "actionlint")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("PROOFGATE_REQUIRE_ACTIONLINT") == "1" {
		t.Fatalf("actionlint not found (go install github.com/rhysd/actionlint/cmd/actionlint@%s)", ActionlintVersion)
	}
	t.Skipf("actionlint not found: go install github.com/rhysd/actionlint/cmd/actionlint@%s", ActionlintVersion)
	return ""
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Every workflow file (the reusable workflow and the examples) passes
// actionlint: syntax, expressions, contexts, the inputs a reusable
// workflow declares against what callers pass, and shellcheck of run:
// scripts when shellcheck is installed.
func TestWorkflowsActionlint(t *testing.T) {
	bin := actionlint(t)
	root := filepath.Join("..", "..", "..")
	files, err := filepath.Glob(filepath.Join(root, ".github", "workflows", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "workflows", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, examples...)
	if len(files) < 5 {
		t.Fatalf("found %d workflow files: %v", len(files), files)
	}
	cmd := exec.Command(bin, append([]string{"-no-color"}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("actionlint %v: %v\n%s", files, err, out)
	}
	// actionlint itself refuses what it should: a workflow with a bad
	// expression context fails.
	bad := filepath.Join(t.TempDir(), "bad.yml")
	writeFile(t, bad, "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.event.pull_request.nope.nope }} ${{ inputs.missing }}\n")
	if out, err := exec.Command(bin, "-no-color", bad).CombinedOutput(); err == nil {
		t.Fatalf("actionlint accepted an undefined input:\n%s", out)
	}
}
