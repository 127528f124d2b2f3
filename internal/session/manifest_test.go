package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/replay"
)

// An input carrying a conversation is stored by manifest; the audit
// rebuilds it to its input hash and lists every member blob; a changed
// message blob is refused.
func TestManifestInputRebuilt(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	args := `{"messages":[{"role":"user","text":"one"},{"role":"assistant","text":"two"}],"name":"Ada"}`
	// The request is recorded before the arguments are rendered; a tool
	// that takes no messages refuses them after that (or runs).
	res, _ := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(args)})
	if res.Action == "" {
		t.Fatal("no action recorded")
	}
	rep := f.audit(t)
	a := rep.Sessions[0].Calls[0]
	if !a.Manifest || a.InputRef == a.InputHash {
		t.Fatalf("action %+v: want a manifest input", a)
	}
	var fold []string
	r, err := run.Open(f.state, f.id)
	if err != nil {
		t.Fatal(err)
	}
	fold = r.Report().Blobs
	r.Close()
	if len(rep.Blobs) <= len(fold) {
		t.Fatalf("audit blobs %d, fold blobs %d: manifest members not listed", len(rep.Blobs), len(fold))
	}
	// tamper with one member: a blob the audit lists that the fold does not
	var member string
	for _, b := range rep.Blobs {
		if !contains(fold, b) {
			member = b
			break
		}
	}
	p := filepath.Join(f.dir(), "blobs", "sha256", strings.TrimPrefix(member, "sha256:"))
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte(`{"role":"user","text":"forged"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Audit(f.dir()); !replay.IsReason(err, replay.ReasonBlob) {
		t.Fatalf("audit with a changed message blob: %v", err)
	}
}
