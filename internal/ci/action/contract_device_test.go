//go:build unix

package action

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/event"
)

// A push's work tree is the pushed commit: a contract committed as a link
// to /dev/zero, or replaced by a named pipe, is refused at once instead of
// read without end (or waited on forever).
func TestContractThatIsNotAFileIsRefused(t *testing.T) {
	ws := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, ".proofgate"), 0o755))
	must(os.Symlink("/dev/zero", filepath.Join(ws, ".proofgate", "zero.yaml")))
	must(syscall.Mkfifo(filepath.Join(ws, ".proofgate", "fifo.yaml"), 0o600))
	for _, name := range []string{"zero.yaml", "fifo.yaml"} {
		j := &job{ws: ws, ev: &event.Context{Name: "push", DefaultBranch: "main"}, in: inputs{contract: ".proofgate/" + name}}
		done := make(chan error, 1)
		go func() { _, _, err := j.contractData(context.Background()); done <- err }()
		select {
		case err := <-done:
			if !errors.As(err, new(*bounded.NotRegularError)) {
				t.Errorf("%s: %v, want a NotRegularError", name, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: still reading after 2s", name)
		}
	}
}
