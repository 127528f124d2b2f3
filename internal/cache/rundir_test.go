package cache

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

var nm = Use{Name: "node-modules", Mount: "/workspace/node_modules", Run: true}
var nmRO = Use{Name: "node-modules", Mount: "/workspace/node_modules", ReadOnly: true, Run: true}

func openRun(t *testing.T, s *Store) *RunDir {
	t.Helper()
	d, err := s.OpenRun()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func runAcquire(t *testing.T, d *RunDir, check string, uses ...Use) (*Lease, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return d.Acquire(ctx, "run-1", check, uses)
}

// TestRunCacheLifecycle: a run cache starts empty in the run's own
// directory (scope run-<16 hex>, lifetime run), carries what the install
// wrote to the next check (provenance recorded, written by the install),
// sits beside persistent caches in one lease, and is gone with its owner
// lock after Close.
func TestRunCacheLifecycle(t *testing.T) {
	root := t.TempDir()
	s := open(t, root, Local())
	d := openRun(t, s)
	if !isRunName(d.Name()) || d.Dir() != filepath.Join(s.Root(), d.Name()) {
		t.Fatalf("run dir %s at %s", d.Name(), d.Dir())
	}
	l, err := runAcquire(t, d, "install", rw, nm)
	if err != nil {
		t.Fatal(err)
	}
	m := l.Mounts()
	if m[0].Scope != "local" || m[0].Lifetime != "" || m[1].Scope != d.Name() || m[1].RunScope != "local" ||
		m[1].Lifetime != runtime.LifetimeRun || m[1].Provenance != "empty" || m[1].Entries != 0 {
		t.Fatalf("mounts %+v", m)
	}
	if m[1].Source != filepath.Join(d.Dir(), "node-modules") {
		t.Fatalf("source %s", m[1].Source)
	}
	write(t, filepath.Join(m[1].Source, "pkg", "index.js"), "module.exports = 1")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l, err = runAcquire(t, d, "test", nmRO)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Mounts()[0]
	if got.Mode != runtime.CacheReadOnly || got.Provenance != "recorded" || got.WrittenBy != "run-1/install" || got.Entries != 2 || got.Generation != 1 {
		t.Fatalf("second mount %+v", got)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.Dir(), d.Dir() + ".lock"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after Close: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "local", "go-mod")); err != nil {
		t.Errorf("persistent cache removed with the run: %v", err)
	}
}

// TestRunCacheIsolated: two runs of one store (two concurrent runs of the
// same contract) never see each other's run caches, and a run cache is
// never mounted through the Store itself (no run directory).
func TestRunCacheIsolated(t *testing.T) {
	s := open(t, t.TempDir(), Local())
	a, b := openRun(t, s), openRun(t, s)
	defer a.Close()
	defer b.Close()
	la, err := runAcquire(t, a, "install", nm)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(la.Mounts()[0].Source, "a-only"), "a")
	// b's writer is not serialized behind a's: different directories.
	lb, err := runAcquire(t, b, "install", nm)
	if err != nil {
		t.Fatal(err)
	}
	if mb := lb.Mounts()[0]; mb.Entries != 0 || mb.Source == la.Mounts()[0].Source || mb.Scope == a.Name() {
		t.Fatalf("b sees %+v", mb)
	}
	la.Release()
	lb.Release()
	_, err = s.Acquire(context.Background(), "r", "c", []Use{nm})
	reason(t, err, ReasonUse)
}

// TestRunCacheRefusesPlantedLinks: an install check that leaves a symlink
// out of the run cache (absolute, or ../..) or a FIFO makes the next mount
// refuse it, like every cache.
func TestRunCacheRefusesPlantedLinks(t *testing.T) {
	for name, plant := range map[string]func(dir string) error{
		"absolute": func(dir string) error { return os.Symlink("/etc", filepath.Join(dir, "pkg")) },
		"dotdot":   func(dir string) error { return os.Symlink("../../..", filepath.Join(dir, "up")) },
		"fifo":     func(dir string) error { return mkfifo(filepath.Join(dir, "f")) },
	} {
		t.Run(name, func(t *testing.T) {
			d := openRun(t, open(t, t.TempDir(), Local()))
			defer d.Close()
			l, err := runAcquire(t, d, "install", nm)
			if err != nil {
				t.Fatal(err)
			}
			if err := plant(l.Mounts()[0].Source); err != nil {
				t.Fatal(err)
			}
			if err := l.Release(); err == nil {
				t.Fatal("release accepted the planted entry")
			}
			_, err = runAcquire(t, d, "test", nmRO)
			want := ReasonSymlink
			if name == "fifo" {
				want = ReasonSpecial
			}
			reason(t, err, want)
		})
	}
}

// TestRunCacheCrashSwept: a harness killed (SIGKILL) with a run directory
// open leaves it behind; the next OpenRun removes it, a live run's is
// kept (also by cache prune, which reports it in use), and prune removes
// a dead one.
func TestRunCacheCrashSwept(t *testing.T) {
	root := t.TempDir()
	s := open(t, root, Local())
	cmd, line := helperProc(t, "run", root, "open ")
	dead := strings.TrimPrefix(line, "open ")
	live := openRun(t, s)
	defer live.Close()
	rep, err := Prune(root, PruneOptions{Scopes: nil, OlderThan: time.Hour, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Leftovers {
		if r.Action != ActionInUse {
			t.Errorf("prune with both runs alive: %+v", r)
		}
	}
	if len(rep.Leftovers) != 2 {
		t.Fatalf("leftovers %+v", rep.Leftovers)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(root, dead, "node-modules", "x")); err != nil {
		t.Fatalf("the killed run left nothing: %v", err)
	}
	next := openRun(t, s)
	defer next.Close()
	for _, p := range []string{filepath.Join(root, dead), filepath.Join(root, dead+".lock")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s not swept by the next run: %v", p, err)
		}
	}
	if _, err := os.Lstat(live.Dir()); err != nil {
		t.Errorf("a live run's directory was swept: %v", err)
	}
	// Prune removes a dead one too (here: made dead by closing its lock
	// without Close, as a crash does).
	orphan := openRun(t, s)
	orphan.owner.Close()
	rep, err = Prune(root, PruneOptions{OlderThan: time.Hour, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, r := range rep.Leftovers {
		if r.Name == orphan.Name() && r.Action == ActionRemoved {
			removed++
		}
	}
	if _, err := os.Lstat(orphan.Dir()); removed != 1 || !os.IsNotExist(err) {
		t.Fatalf("prune left %s: %+v", orphan.Name(), rep.Leftovers)
	}
}
