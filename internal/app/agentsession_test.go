package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/run"
)

// A run planned without --implemented-by has no agent-session evidence
// (a refused export, nothing written); an existing output that cannot be
// removed is a *ReplaceError.
func TestExportAgentSession(t *testing.T) {
	state, r := executed(t)
	opener := func(id string) (string, func(), error) {
		dir, _, done, err := run.ReadDir(state, id)
		return dir, done, err
	}
	out := filepath.Join(t.TempDir(), "a.agent-session.tar.gz")
	o := AgentSessionOptions{Run: r.ID, Opener: opener, Out: out, Key: keytest.New(t).Signer}
	if err := ExportAgentSession(context.Background(), o); !errors.As(err, new(*bundle.ExportError)) {
		t.Fatalf("a run without an implementation run: %v", err)
	}
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused export wrote %s: %v", out, err)
	}
	if err := os.MkdirAll(filepath.Join(out, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	o.Replace = true
	if err := ExportAgentSession(context.Background(), o); !errors.As(err, new(*ReplaceError)) {
		t.Fatalf("an output that cannot be removed: %v", err)
	}
}
