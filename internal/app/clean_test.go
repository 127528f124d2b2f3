package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// A dry run lists a root's entries and removes nothing; an apply with a
// run removes them and records what it removed in the run's log; a
// contract without roots is a usage error.
func TestCleanRoots(t *testing.T) {
	state, r := executedWith(t, contractYAML+"cleanup: [build]\n")
	r.Close()
	repo := filepath.Dir(state)
	os.MkdirAll(filepath.Join(repo, "build", "sub"), 0o755)
	os.WriteFile(filepath.Join(repo, "build", "sub", "a.o"), []byte("x"), 0o644)
	o := CleanOptions{Repo: repo, State: state, Run: r.ID, Actor: "alice"}
	dry, err := CleanRoots(o)
	if err != nil || dry.Applied || dry.Removed != 1 || dry.Recorded {
		t.Fatalf("dry run %+v, %v", dry, err)
	}
	o.Apply = true
	res, err := CleanRoots(o)
	if err != nil || !res.Applied || res.Removed != 1 || !res.Recorded || res.RunID != r.ID {
		t.Fatalf("apply %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "build", "sub")); !os.IsNotExist(err) {
		t.Fatalf("build/sub is still there: %v", err)
	}
	ev, err := run.ReadLog(r.Dir)
	if err != nil || ev[len(ev)-1].Type != replay.TypeCleanup || !strings.Contains(string(ev[len(ev)-1].Data), `"alice"`) {
		t.Fatalf("the log does not end in the cleanup: %v", err)
	}
	y := filepath.Join(t.TempDir(), "contract.yaml")
	os.WriteFile(y, []byte(contractYAML), 0o644)
	if _, err := CleanRoots(CleanOptions{Repo: repo, State: state, Contract: y}); class(err) != exit.Usage {
		t.Fatalf("no roots: %v (class %v)", err, class(err))
	}
}
