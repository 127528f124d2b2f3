package lock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A kept lock excludes exactly as a plain one: while it is held nobody
// else acquires it, and while another holds it Retake is refused with
// that owner; the file in place reads (padded) as this hold's owner.
func TestKeptLockExcludes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.lock")
	l, err := AcquireKept(path)
	if err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if _, err := Acquire(path); !errors.As(err, &held) || held.Owner.PID != os.Getpid() {
		t.Fatalf("acquire while kept lock held: %v", err)
	}
	first := l.Owner().Created
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("released kept lock still in place: %v", err)
	}
	other, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Retake(); !errors.As(err, &held) {
		t.Fatalf("retake while another holds it: %v", err)
	}
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if err := l.Retake(); err != nil {
		t.Fatal(err)
	}
	o, err := Read(path)
	if err != nil {
		t.Fatalf("the padded owner file does not read: %v", err)
	}
	raw, _ := os.ReadFile(path)
	switch {
	case !o.Created.After(first) || !o.Created.Equal(l.Owner().Created):
		t.Fatalf("retake recorded created %v, first hold %v, lock says %v", o.Created, first, l.Owner().Created)
	case string(raw) != string(l.raw) || !strings.HasSuffix(string(raw), " \n"):
		t.Fatalf("lock file %q, the lock's own %q", raw, l.raw)
	}
	if err := l.Retake(); err == nil {
		t.Fatal("retake of a lock that is held succeeded")
	}
	if got, _ := Read(path); got != o {
		t.Fatalf("a refused retake changed the lock: %+v", got)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l.Discard()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("left behind: %v", names)
	}
}

// A recorder killed while it holds a kept lock: its owner is provably
// dead, so Break removes the lock and the owner file it kept (as does the
// next AcquireKept). A live process's kept file is never swept.
func TestKeptLockOfKilledOwner(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.lock")
	live := startHelper(t, "keptreleased", path) // held, released, file kept
	if l := live.line(t); !strings.HasPrefix(l, "locked") {
		t.Fatal(l)
	}
	liveFiles := dirNames(t, dir)
	if len(liveFiles) != 1 || !strings.HasSuffix(liveFiles[0], ".tmp") {
		t.Fatalf("a live released kept lock leaves %v", liveFiles)
	}
	c := startHelper(t, "holdkept", path)
	if l := c.line(t); !strings.HasPrefix(l, "locked") {
		t.Fatal(l)
	}
	var held *HeldError
	if _, err := AcquireKept(path); !errors.As(err, &held) || held.Owner.PID != c.cmd.Process.Pid {
		t.Fatalf("acquire of a live kept lock: %v", err)
	}
	if _, err := Break(path, 0, time.Now()); err == nil {
		t.Fatal("broke the lock of a live owner")
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()
	if _, err := Break(path, 0, time.Now()); err != nil {
		t.Fatalf("break after the owner died: %v", err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, liveFiles) {
		t.Fatalf("after the break: %v, want only the live owner's kept file %v", names, liveFiles)
	}
	l, err := AcquireKept(path)
	if err != nil {
		t.Fatal(err)
	}
	names := dirNames(t, dir)
	// the killed owner's kept file is gone, the live helper's stays
	want := []string{"events.lock", filepath.Base(l.tmp), liveFiles[0]}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("after sweep: %v, want %v", names, want)
	}
	_ = l.Release()
	l.Discard()

	// a recorder that died between holds: its released kept file is
	// swept by the next AcquireKept, the live one's still stays
	gone := startHelper(t, "keptreleased", path)
	if l := gone.line(t); !strings.HasPrefix(l, "locked") {
		t.Fatal(l)
	}
	gone.cmd.Process.Kill()
	gone.cmd.Wait()
	if n := len(dirNames(t, dir)); n != 2 {
		t.Fatalf("%d files, want the live and the dead helper's kept files", n)
	}
	l, err = AcquireKept(path)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"events.lock", filepath.Base(l.tmp), liveFiles[0]}
	slices.Sort(want)
	if names := dirNames(t, dir); !slices.Equal(names, want) {
		t.Fatalf("after the sweep: %v, want %v", names, want)
	}
	_ = l.Release()
	l.Discard()
}

// SweepTemps removes the owner file of a process killed before it linked
// it (empty: killed before it wrote it), and keeps a live process's, one
// linked as the lock, and names that are not owner files.
func TestSweepTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prune.lock")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s.%d.00112233aabbccdd.tmp", path, gone.Process.Pid)
	live := fmt.Sprintf("%s.%d.00112233aabbccdd.tmp", path, os.Getpid())
	odd := path + ".x.00112233aabbccdd.tmp"
	for _, p := range []string{dead, live, odd} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	linkedDead := fmt.Sprintf("%s.%d.99112233aabbccdd.tmp", path, gone.Process.Pid)
	if err := os.WriteFile(linkedDead, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(linkedDead, path); err != nil {
		t.Fatal(err)
	}
	SweepTemps(path)
	got := dirNames(t, dir)
	want := []string{"prune.lock", filepath.Base(odd), filepath.Base(live), filepath.Base(linkedDead)}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("after the sweep: %v, want %v", got, want)
	}
}
