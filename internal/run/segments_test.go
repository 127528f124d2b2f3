package run

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

const fiveChecks = `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: a, run: ['true']}
  - {id: b, run: [sh, -c, 'echo out; echo err >&2']}
  - {id: c, run: ['true']}
  - {id: d, run: ['true']}
  - {id: e, run: ['true']}
approval: {required: 1}
`

// A run whose log is sealed into segments as it grows reads back whole
// through every reader: Open (and the replay it folds), Audit, VerifyLog,
// ReadLog; a deleted segment is refused by each, naming the file.
func TestSegmentedRunReadsWhole(t *testing.T) {
	t.Setenv(eventlog.SegmentSizeEnv, "1KiB")
	f := newFixture(t, fiveChecks)
	dir := f.complete(t)
	files, err := eventlog.Files(filepath.Join(dir, EventsFile))
	if err != nil || len(files) < 4 {
		t.Fatalf("files %v %v", files, err)
	}
	rep, err := Audit(dir)
	if err != nil || rep.State != replay.Complete || len(rep.Checks) != 5 {
		t.Fatalf("audit %+v %v", rep, err)
	}
	sum, err := VerifyLog(dir)
	if err != nil || sum.Len != rep.ChainLength || sum.Head != rep.ChainHead {
		t.Fatalf("verify %+v %v (report %d %s)", sum, err, rep.ChainLength, rep.ChainHead)
	}
	evs, err := ReadLog(dir)
	if err != nil || len(evs) != sum.Len {
		t.Fatalf("read %d %v", len(evs), err)
	}
	r, err := Open(f.state, filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	if head, n := r.Head(); n != sum.Len || head != sum.Head {
		t.Fatalf("open: %d %s", n, head)
	}
	r.Close()

	if err := os.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	var ce *eventlog.ChainError
	if _, err := VerifyLog(dir); !errors.As(err, &ce) || ce.Reason != eventlog.SegmentGap || ce.File != filepath.Base(files[1]) {
		t.Fatalf("verify after delete: %v", err)
	}
	if _, err := Audit(dir); !errors.As(err, &ce) || ce.Reason != eventlog.SegmentGap {
		t.Fatalf("audit after delete: %v", err)
	}
	if _, err := Open(f.state, filepath.Base(dir)); !errors.As(err, &ce) || ce.File != filepath.Base(files[1]) {
		t.Fatalf("open after delete: %v", err)
	}
}
