package cache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a helper process: PG_CACHE_HELPER selects
// what it does instead of running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PG_CACHE_HELPER"); mode != "" {
		os.Exit(cacheHelper(mode, os.Getenv("PG_CACHE_PATH")))
	}
	os.Exit(m.Run())
}

func cacheHelper(mode, path string) int {
	switch mode {
	case "hold": // hold an exclusive flock on path, as a mounted cache does
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			_, err = tryLock(f, true)
		}
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("locked")
		time.Sleep(time.Minute)
	case "run": // open a run directory under root path, write a run cache, wait to be killed
		s, err := Open(path, Local(), "")
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		d, err := s.OpenRun()
		if err == nil {
			var l *Lease
			if l, err = d.Acquire(context.Background(), "r", "install", []Use{nm}); err == nil {
				err = os.WriteFile(filepath.Join(l.Mounts()[0].Source, "x"), []byte("x"), 0o644)
			}
		}
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("open", d.Name())
		time.Sleep(time.Minute)
	case "crash": // prune path (a root) and stop right after the rename
		pruneAfterRename = func(dst string) {
			fmt.Println("renamed", dst)
			time.Sleep(time.Minute)
		}
		_, err := Prune(path, PruneOptions{Scopes: []string{"pr-7"}, Apply: true})
		fmt.Println("error", err)
		return 1
	}
	return 2
}

// helperProc starts the helper and waits for its first line.
func helperProc(t *testing.T, mode, path, want string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PG_CACHE_HELPER="+mode, "PG_CACHE_PATH="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, want) {
		t.Fatalf("helper said %q (%v), want %s", line, err, want)
	}
	return cmd, strings.TrimSpace(line)
}

// scopeAt makes <root>/<scope> with one cache (tree, lock, state) whose
// files are all dated at.
func scopeAt(t *testing.T, root, scope string, at time.Time) {
	t.Helper()
	d := filepath.Join(root, scope)
	write(t, filepath.Join(d, "go-mod", "pkg", "a"), "12345")
	write(t, filepath.Join(d, "go-mod.lock"), "")
	write(t, filepath.Join(d, "go-mod.state"), "{}")
	for _, p := range []string{filepath.Join(d, "go-mod", "pkg", "a"), filepath.Join(d, "go-mod", "pkg"), filepath.Join(d, "go-mod"), filepath.Join(d, "go-mod.lock"), filepath.Join(d, "go-mod.state"), d} {
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func byName(rep PruneReport) map[string]ScopeReport {
	m := map[string]ScopeReport{}
	for _, s := range rep.Scopes {
		m[s.Name] = s
	}
	return m
}

const (
	hexScope    = "branch-0123456789abcdef"
	commitScope = "commit-0123456789abcdef0123456789abcdef01234567"
	// badCommit is a commit scope name of 39 hex: never a candidate.
	badCommit = "commit-0123456789abcdef0123456789abcdef0123456"
)

// TestPruneAge: old pr, branch and commit scopes go with Apply, young ones stay,
// default and local stay however old, and other names are not candidates.
func TestPruneAge(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, s := range []string{"pr-7", hexScope, commitScope, "default", "local", "pr-07", "branch-0123", badCommit, "other"} {
		scopeAt(t, root, s, old)
	}
	scopeAt(t, root, "pr-8", time.Now())
	// A young state file makes a scope young, though its tree is old.
	scopeAt(t, root, "pr-9", old)
	if err := os.Chtimes(filepath.Join(root, "pr-9", "go-mod.state"), time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	rep, err := Prune(root, PruneOptions{OlderThan: 14 * 24 * time.Hour, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	got := byName(rep)
	for s, want := range map[string]Action{"pr-7": ActionRemoved, hexScope: ActionRemoved, commitScope: ActionRemoved, "pr-8": ActionSkipped, "pr-9": ActionSkipped} {
		if got[s].Action != want {
			t.Errorf("%s: %+v, want %s", s, got[s], want)
		}
		if exists(filepath.Join(root, s)) != (want != ActionRemoved) {
			t.Errorf("%s: exists %v after %s", s, exists(filepath.Join(root, s)), want)
		}
	}
	if len(rep.Scopes) != 5 {
		t.Errorf("reported %+v, want only the 5 candidates", rep.Scopes)
	}
	for _, s := range []string{"default", "local", "pr-07", "branch-0123", badCommit, "other"} {
		if !exists(filepath.Join(root, s, "go-mod", "pkg", "a")) {
			t.Errorf("%s was touched", s)
		}
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), pruningPrefix) {
			t.Errorf("left %s", e.Name())
		}
	}
}

// TestPruneNamed: default, local and malformed names are refused before
// anything changes, naming the scope; a named scope goes regardless of age.
func TestPruneNamed(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, s := range []string{"default", "local", "pr-7"} {
		scopeAt(t, root, s, old)
	}
	for _, bad := range []string{"default", "local", "pr-0", "pr-007", "pr--1", "PR-7", "branch-0123456789ABCDEF", "branch-0123456789abcde", "../pr-7", "pr-7/", ".pruning-pr-7-00000000", "pr-8", badCommit, "COMMIT-" + commitScope[7:], "commit-../" + commitScope[10:]} {
		_, err := Prune(root, PruneOptions{Scopes: []string{"pr-7", bad}, Apply: true})
		var ce *Error
		if !errors.As(err, &ce) || ce.Reason != ReasonScope || ce.Scope != bad {
			t.Errorf("scope %q: %v, want a scope error naming it", bad, err)
		}
	}
	for _, s := range []string{"default", "local", "pr-7"} {
		if !exists(filepath.Join(root, s, "go-mod", "pkg", "a")) {
			t.Fatalf("%s changed after refused prunes", s)
		}
	}
	if _, err := Prune(root, PruneOptions{Apply: true}); err == nil {
		t.Error("a prune without an age or a scope was accepted")
	}
	scopeAt(t, root, "pr-8", time.Now())
	rep, err := Prune(root, PruneOptions{Scopes: []string{"pr-8"}, Apply: true})
	if err != nil || len(rep.Scopes) != 1 || rep.Scopes[0].Action != ActionRemoved || exists(filepath.Join(root, "pr-8")) {
		t.Fatalf("named young scope: %+v, %v", rep, err)
	}
	if !exists(filepath.Join(root, "pr-7")) {
		t.Fatal("an unnamed scope was removed")
	}
}

// TestPruneInUse: a scope whose lock a live process holds is in-use and
// kept, with everything in it; once released it goes.
func TestPruneInUse(t *testing.T) {
	root := t.TempDir()
	scopeAt(t, root, "pr-7", time.Now().Add(-30*24*time.Hour))
	cmd, _ := helperProc(t, "hold", filepath.Join(root, "pr-7", "go-mod.lock"), "locked")
	rep, err := Prune(root, PruneOptions{OlderThan: time.Hour, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := byName(rep)["pr-7"]; r.Action != ActionInUse || !exists(filepath.Join(root, "pr-7", "go-mod", "pkg", "a")) {
		t.Fatalf("held scope: %+v", r)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	rep, err = Prune(root, PruneOptions{OlderThan: time.Hour, Apply: true})
	if err != nil || byName(rep)["pr-7"].Action != ActionRemoved {
		t.Fatalf("released scope: %+v, %v", rep, err)
	}
}

// TestPruneSymlinks: a symlinked scope is skipped and its target kept; a
// symlinked root is refused.
func TestPruneSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	scopeAt(t, outside, "pr-7", old)
	if err := os.Symlink(filepath.Join(outside, "pr-7"), filepath.Join(root, "pr-7")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "pr-8"), "a file, not a scope")
	rep, err := Prune(root, PruneOptions{OlderThan: time.Hour, Scopes: []string{"pr-7", "pr-8"}, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	got := byName(rep)
	if got["pr-7"].Action != ActionSkipped || !strings.Contains(got["pr-7"].Reason, "symlink") || got["pr-8"].Action != ActionSkipped {
		t.Errorf("report %+v", rep.Scopes)
	}
	if !exists(filepath.Join(outside, "pr-7", "go-mod", "pkg", "a")) || !exists(filepath.Join(root, "pr-7")) || !exists(filepath.Join(root, "pr-8")) {
		t.Fatal("a symlinked scope's target or the link itself was removed")
	}
	// A symlink inside a removed scope is removed as a link, its target kept.
	scopeAt(t, root, "pr-9", old)
	if err := os.Symlink(filepath.Join(outside, "pr-7", "go-mod"), filepath.Join(root, "pr-9", "go-mod", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(root, "pr-9", "go-mod"), old, old); err != nil {
		t.Fatal(err)
	}
	rep, err = Prune(root, PruneOptions{OlderThan: time.Hour, Scopes: []string{"pr-9"}, Apply: true})
	if err != nil || byName(rep)["pr-9"].Action != ActionRemoved || byName(rep)["pr-9"].Bytes != 7 {
		t.Fatalf("scope holding a symlink: %+v, %v", rep, err)
	}
	if !exists(filepath.Join(outside, "pr-7", "go-mod", "pkg", "a")) {
		t.Fatal("removing a scope followed a symlink in it")
	}
	link := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	_, err = Prune(link, PruneOptions{OlderThan: time.Hour, Apply: true})
	reason(t, err, ReasonSymlink)
	if !exists(filepath.Join(outside, "pr-7", "go-mod", "pkg", "a")) {
		t.Fatal("pruned through a symlinked root")
	}
}

// TestPruneDryRun: a dry run removes nothing and reports the bytes, a
// lower bound past the entry cap.
func TestPruneDryRun(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "pr-7", "go-mod", "b"), "1234567")
	scopeAt(t, root, "pr-7", time.Now().Add(-30*24*time.Hour))
	rep, err := Prune(root, PruneOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := byName(rep)["pr-7"]
	// 5 + 7 + the state record's 2
	if r.Action != ActionWouldRemove || r.Bytes != 14 || r.BytesTruncated || r.Activity.IsZero() {
		t.Fatalf("dry run: %+v", r)
	}
	if !exists(filepath.Join(root, "pr-7", "go-mod", "b")) {
		t.Fatal("a dry run removed the scope")
	}
	rep, _ = Prune(root, PruneOptions{OlderThan: time.Hour, MaxEntries: 2})
	if r := byName(rep)["pr-7"]; !r.BytesTruncated || r.Bytes >= 14 {
		t.Fatalf("capped walk: %+v", r)
	}
}

// TestPruneCrash: a prune killed right after the rename leaves the scope
// name gone and an unreachable .pruning-* directory, which the next prune
// (even a dry one reports it) removes.
func TestPruneCrash(t *testing.T) {
	root := t.TempDir()
	scopeAt(t, root, "pr-7", time.Now())
	cmd, line := helperProc(t, "crash", root, "renamed ")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	left := strings.TrimPrefix(line, "renamed ")
	if exists(filepath.Join(root, "pr-7")) || !exists(filepath.Join(left, "go-mod", "pkg", "a")) {
		t.Fatalf("after the kill: scope exists %v, leftover %s exists %v", exists(filepath.Join(root, "pr-7")), left, exists(left))
	}
	rep, err := Prune(root, PruneOptions{OlderThan: time.Hour})
	if err != nil || len(rep.Leftovers) != 1 || rep.Leftovers[0].Action != ActionWouldRemove || !exists(left) {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	rep, err = Prune(root, PruneOptions{OlderThan: time.Hour, Apply: true})
	if err != nil || len(rep.Leftovers) != 1 || rep.Leftovers[0].Action != ActionRemoved || exists(left) {
		t.Fatalf("apply: %+v, %v", rep, err)
	}
}

// TestLockRenamedWhileWaiting: an Acquire that opened a lock file and
// waited for it while a prune renamed the scope away does not use the
// lock it then gets on the removed file: it opens the lock again, in a
// new scope directory.
func TestLockRenamedWhileWaiting(t *testing.T) {
	root := t.TempDir()
	s := open(t, root, PullRequest(7))
	acquire(t, s, rw).Release()
	lockPath := filepath.Join(s.Root(), "pr-7", "go-mod.lock")
	held, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if busy, err := tryLock(held, true); busy || err != nil {
		t.Fatal(busy, err)
	}
	waiting := make(chan struct{})
	lockBusyHook = func(string) { close(waiting) }
	defer func() { lockBusyHook = nil }()
	type result struct {
		l   *Lease
		err error
	}
	done := make(chan result)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := s.Acquire(ctx, "run-2", "check", []Use{rw})
		done <- result{l, err}
	}()
	<-waiting
	if err := os.Rename(filepath.Join(s.Root(), "pr-7"), filepath.Join(s.Root(), ".pruning-pr-7-00000000")); err != nil {
		t.Fatal(err)
	}
	held.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Release()
	fi, err1 := r.l.locks[0].Stat()
	now, err2 := os.Lstat(lockPath)
	if err1 != nil || err2 != nil || !os.SameFile(fi, now) {
		t.Fatalf("the lease holds a lock that is not %s (%v, %v)", lockPath, err1, err2)
	}
	if m := r.l.Mounts()[0]; !exists(m.Source) || !strings.HasPrefix(m.Source, filepath.Join(s.Root(), "pr-7")) {
		t.Fatalf("mount %s", m.Source)
	}
}

// TestPruneRacedRun: a run that created and locked a lock file the prune
// had not seen, before the rename, makes the scope in-use: it is put back
// under its name with the run's lock intact. A leftover whose lock a run
// holds is kept too.
func TestPruneRacedRun(t *testing.T) {
	root := t.TempDir()
	scopeAt(t, root, "pr-7", time.Now())
	var late *os.File
	pruneAfterRename = func(dst string) {
		f, err := os.OpenFile(filepath.Join(dst, "npm.lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Error(err)
			return
		}
		if busy, err := tryLock(f, true); busy || err != nil {
			t.Error(busy, err)
		}
		late = f
	}
	defer func() { pruneAfterRename = nil }()
	rep, err := Prune(root, PruneOptions{Scopes: []string{"pr-7"}, Apply: true})
	if late == nil {
		t.Fatal("the hook did not run")
	}
	defer late.Close()
	if r := byName(rep)["pr-7"]; err != nil || r.Action != ActionInUse || !strings.Contains(r.Reason, "put back") {
		t.Fatalf("raced scope: %+v, %v", rep, err)
	}
	if !exists(filepath.Join(root, "pr-7", "go-mod", "pkg", "a")) || !exists(filepath.Join(root, "pr-7", "npm.lock")) {
		t.Fatal("the raced scope is not back under its name")
	}
	pruneAfterRename = nil
	left := filepath.Join(root, ".pruning-pr-8-0123abcd")
	write(t, filepath.Join(left, "go-mod", "a"), "x")
	write(t, filepath.Join(left, "go-mod.lock"), "")
	held, err := os.OpenFile(filepath.Join(left, "go-mod.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if busy, err := tryLock(held, true); busy || err != nil {
		t.Fatal(busy, err)
	}
	rep, err = Prune(root, PruneOptions{OlderThan: time.Hour, Apply: true})
	if err != nil || len(rep.Leftovers) != 1 || rep.Leftovers[0].Action != ActionInUse || !exists(filepath.Join(left, "go-mod", "a")) {
		t.Fatalf("held leftover: %+v, %v", rep, err)
	}
	held.Close()
	rep, err = Prune(root, PruneOptions{OlderThan: time.Hour, Apply: true})
	if err != nil || rep.Leftovers[0].Action != ActionRemoved || exists(left) {
		t.Fatalf("released leftover: %+v, %v", rep, err)
	}
}
