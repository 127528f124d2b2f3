package session_test

import (
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/kernel/session"
)

// Between calls a session's recorder holds no lock but keeps its owner
// file (ADR 0020): exactly one events.lock.<pid>.<hex>.tmp and no
// events.lock; another writer takes the lock meanwhile (an approval); the
// session's next call re-takes it; session.ended leaves neither file.
func TestKeptLockFileAcrossCalls(t *testing.T) {
	f := newFixture(t)
	s, err := session.Start(ctx, f.opts("agent-1"))
	if err != nil {
		t.Fatal(err)
	}
	lockFiles := func() (kept []string, held bool) {
		kept, _ = filepath.Glob(filepath.Join(f.dir(), "events.lock.*.tmp"))
		held = len(mustGlob(t, filepath.Join(f.dir(), "events.lock"))) == 1
		return kept, held
	}
	call(t, s, "greet", `{"name":"a"}`)
	pending := call(t, s, "deploy", `{"env":"prod"}`)
	if kept, held := lockFiles(); len(kept) != 1 || held {
		t.Fatalf("between calls: kept %v, lock held %v", kept, held)
	}
	if err := session.Approve(f.opts("agent-1"), pending.Action, "alice"); err != nil {
		t.Fatal(err) // another writer's hold, while the session keeps its file
	}
	if res := call(t, s, "deploy", `{"env":"prod"}`); res.Status != session.Finished {
		t.Fatalf("approved call: %+v", res)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	if kept, held := lockFiles(); len(kept) != 0 || held {
		t.Fatalf("after session.ended: kept %v, lock held %v", kept, held)
	}
	f.audit(t)
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
