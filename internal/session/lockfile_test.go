package session_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// Between calls a session's recorder holds no lock but keeps its owner
// file (ADR 0020): exactly one events.lock.<pid>.<hex>.tmp and no
// events.lock; another writer takes the lock meanwhile (an approval); the
// session's next call re-takes it; session.ended leaves neither file. Its
// tools' process records come from kept slots (ADR 0028): between calls
// no record, one or two slots, the same files call after call; at most two
// blob files made ahead (blob.Spares); after session.ended the procs
// directory is empty, no blob file made ahead is left and the log's head
// index names its last event.
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
	slots := f.slots(t)
	if n := len(slots); n == 0 || n > 2 {
		t.Fatalf("after a call: slots %v, want one or two", slots)
	}
	call(t, s, "greet", `{"name":"b"}`)
	if again := f.slots(t); !slices.Equal(again, slots) {
		t.Fatalf("after another call: slots %v, want the same %v", again, slots)
	}
	if tmp := mustGlob(t, filepath.Join(f.dir(), run.BlobDir, ".tmp-*")); len(tmp) > 2 {
		t.Fatalf("between calls: %d blob files made ahead, want at most 2", len(tmp))
	}
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
	f.noProcFiles(t)
	if tmp := mustGlob(t, filepath.Join(f.dir(), run.BlobDir, ".tmp-*")); len(tmp) != 0 {
		t.Fatalf("after session.ended: blob files made ahead left: %v", tmp)
	}
	f.audit(t)
	evs := f.events(t)
	b, err := os.ReadFile(filepath.Join(f.dir(), eventlog.HeadFile))
	if err != nil {
		t.Fatal(err)
	}
	var ix struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(b, &ix); err != nil || ix.Seq != evs[len(evs)-1].Seq {
		t.Fatalf("head index after session.ended: %s (%v), want seq %d", b, err, evs[len(evs)-1].Seq)
	}
}

// slots lists the run's process-record slots (.slot-*.json in procs).
func (f *fixture) slots(t *testing.T) []string {
	t.Helper()
	if paths, err := lock.GroupPaths(filepath.Join(f.dir(), run.ProcDir)); err != nil || len(paths) != 0 {
		t.Fatalf("process records between calls: %v %v", paths, err)
	}
	return mustGlob(t, filepath.Join(f.dir(), run.ProcDir, ".slot-*.json"))
}

// noProcFiles fails unless the run's procs directory is empty or absent:
// no record, no slot of this process or of a dead one.
func (f *fixture) noProcFiles(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(f.dir(), run.ProcDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("procs holds %v", names)
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
