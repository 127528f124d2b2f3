package replay

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/proofgate/proofgate/"

// writerSide are packages a verifier must not need: the writer's lock,
// git, the run writer, the blob store it writes through and the runtime
// providers.
var writerSide = []string{
	module + "internal/lock",
	module + "internal/source",
	module + "internal/run",
	module + "internal/blob",
	module + "internal/docker",
	module + "internal/process",
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list packages with")
	}
	out, err := exec.Command(gobin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// The verification side (this package, and the bundle verifier with its
// checkpoint reader) imports nothing of the writer side.
func TestVerifierImportsNoWriter(t *testing.T) {
	for _, pkg := range []string{module + "kernel/replay", module + "kernel/input", module + "bundle", module + "bundle/checkpoint"} {
		deps := goList(t, "-deps", pkg)
		if !slices.Contains(deps, pkg) {
			t.Fatalf("go list -deps %s does not list the package itself: %v", pkg, deps)
		}
		for _, w := range writerSide {
			if slices.Contains(deps, w) {
				t.Errorf("%s depends on %s", pkg, w)
			}
		}
	}
}

// The replay itself stands on the event log, canonical JSON, the strict
// decoder, the input rebuilder (kernel/input, which writes through an
// interface and imports no blob store), the contract model (with the printable-text check it loads
// with), the approval tally (with its pure rule evaluation: the CODEOWNERS
// parser and path globs, and the actor key it counts people by), the exit classes and the runtime seam's types
// only, and runs no command. internal/durable (standard library only) comes
// with the event log, whose appends count their fsyncs through it (ADR 0019).
func TestReplayImports(t *testing.T) {
	allowed := []string{"kernel/actor", "kernel/approval", "kernel/approval/codeowners", "internal/pathglob", "internal/bounded", "internal/canon", "kernel/contract", "internal/durable", "kernel/eventlog", "kernel/exit", "kernel/input", "internal/printable", "kernel/runtime", "internal/strictjson"}
	for _, dep := range goList(t, "-deps", module+"kernel/replay") {
		if dep == "os/exec" {
			t.Errorf("kernel/replay depends on os/exec")
		}
		if rel, ok := strings.CutPrefix(dep, module); ok && rel != "kernel/replay" && !slices.Contains(allowed, rel) {
			t.Errorf("kernel/replay depends on %s", rel)
		}
	}
}
