package retention_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/fscopy"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
)

// deadOwner is a lock owner whose process has exited.
func deadOwner(t *testing.T) lock.Owner {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	o, err := lock.Self(time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	o.PID, o.Start = cmd.Process.Pid, 1
	return o
}

func writeLock(t *testing.T, p string, o lock.Owner) {
	t.Helper()
	b, _ := json.Marshal(o)
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every leftover a killed prune can leave is restored by the next store
// open, each made by hand here (the kill test in cmd/proofgate makes them
// by killing a real prune).
func TestRecoverLeftovers(t *testing.T) {
	f := newFixture(t)
	a, b, c, d := f.complete(), f.complete(), f.complete(), f.awaiting()
	before := t.TempDir()
	fscopy.Tree(t, f.state, before)
	f.apply(later)
	dead := deadOwner(t)
	// No prune lock: Recover changes nothing (one stat).
	tree := treeDigest(t, f.state)
	if err := retention.Recover(f.state); err != nil || treeDigest(t, f.state) != tree {
		t.Fatalf("recover without a prune lock changed the state: %v", err)
	}

	// 1. A recorded archive whose run is back in place without placeholder
	// (killed between the record and the placeholder).
	os.RemoveAll(f.dir(a))
	fscopy.Tree(t, filepath.Join(before, "runs", a), f.dir(a))
	// 2. A placeholder whose directory still holds files (killed while
	// clearing): events.ndjson gone, run.json left.
	run2 := filepath.Join(before, "runs", b, "run.json")
	raw, _ := os.ReadFile(run2)
	os.WriteFile(filepath.Join(f.dir(b), "run.json"), raw, 0o644)
	// 3. The dead prune's lock on a run, and a lock's temporary file it
	// left while taking one.
	writeLock(t, filepath.Join(f.dir(d), "events.lock"), dead)
	lockTmp := filepath.Join(f.dir(c), fmt.Sprintf("events.lock.%d.0123456789abcdef.tmp", dead.PID))
	os.WriteFile(lockTmp, []byte("{}"), 0o644)
	// 4. A blob renamed to .pruning in a retained run.
	blobs, _ := filepath.Glob(filepath.Join(f.dir(d), "blobs", "sha256", "*"))
	pruning := blobs[0] + retention.PruningSuffix
	os.Rename(blobs[0], pruning)
	// 5. A half-written archive, and 6. an archive the log never recorded
	// whose run is in place.
	half := filepath.Join(f.state, "archive", "."+d+".tar.gz.tmp")
	os.WriteFile(half, []byte("half"), 0o444)
	unrecorded := retention.ArchivePath(f.state, d)
	os.WriteFile(unrecorded, []byte("never recorded"), 0o444)
	// 7. A placeholder without a verified archive on a whole run.
	e := f.complete()
	os.WriteFile(filepath.Join(f.dir(e), "archived.json"), []byte(`{"v":1,"run":"`+e+`","archive":"archive/`+e+`.tar.gz","digest":"sha256:`+fill('0', 64)+`","size":1,"state":"COMPLETE","head":"","length":1,"archived":"2026-01-01T00:00:00Z"}`+"\n"), 0o444)
	// The killed prune's lock.
	writeLock(t, filepath.Join(f.state, retention.PruneLock), dead)

	if err := run.Recover(f.state); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a, b} {
		ents, _ := os.ReadDir(f.dir(id))
		if len(ents) != 1 || !retention.IsArchived(f.dir(id)) {
			t.Errorf("run %s holds %v after recovery, want only its placeholder", id, ents)
		}
		if _, err := run.Audit(f.dir(id)); err != nil {
			t.Errorf("run %s: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir(d), "events.lock")); !os.IsNotExist(err) {
		t.Errorf("the dead prune's run lock survived: %v", err)
	}
	if _, err := os.Stat(blobs[0]); err != nil {
		t.Errorf("the .pruning blob was not restored: %v", err)
	}
	for _, p := range []string{pruning, half, unrecorded, lockTmp, filepath.Join(f.state, retention.PruneLock)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived recovery: %v", filepath.Base(p), err)
		}
	}
	if retention.IsArchived(f.dir(e)) {
		t.Error("a placeholder without a verified archive survived on a whole run")
	}
	for _, id := range []string{c, d, e} {
		if _, err := run.Audit(f.dir(id)); err != nil {
			t.Errorf("run %s: %v", id, err)
		}
	}
	// A live prune's lock is left alone, and so is what it is doing.
	lk, err := lock.Acquire(filepath.Join(f.state, retention.PruneLock))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	os.Rename(blobs[0], pruning)
	if err := run.Recover(f.state); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pruning); err != nil {
		t.Errorf("recovery touched a live prune's work: %v", err)
	}
	os.Rename(pruning, blobs[0])
}

func fill(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// A prune killed while it took its lock (its owner file written, not yet
// linked as prune.lock) leaves only that file: the next store open's
// recovery removes it, and keeps a live process's.
func TestRecoverPruneKilledTakingItsLock(t *testing.T) {
	state := t.TempDir()
	dead := filepath.Join(state, fmt.Sprintf("%s.%d.0123456789abcdef.tmp", retention.PruneLock, deadOwner(t).PID))
	live := filepath.Join(state, fmt.Sprintf("%s.%d.0123456789abcdef.tmp", retention.PruneLock, os.Getpid()))
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := retention.Recover(state); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Fatalf("the killed prune's owner file: %v, want it removed", err)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Fatalf("a live process's owner file: %v", err)
	}
}
