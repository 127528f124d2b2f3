//go:build unix

package process_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// harness is the test binary re-executed as a harness (PG_PROCESS_HARNESS
// names its directory): it runs "helper tree DIR/out" with process records
// in DIR/procs until it is killed.
func harness(dir string) {
	var opts []process.Option
	if os.Getenv("PG_PROCESS_NOCGROUP") == "1" {
		opts = append(opts, process.WithoutCgroup())
	}
	o, e := runtime.NewCapture(io.Discard, 0), runtime.NewCapture(io.Discard, 0)
	process.New(opts...).Run(context.Background(), runtime.Spec{
		CheckID: "tree", Argv: []string{os.Getenv("PG_PROCESS_HELPER"), "tree", filepath.Join(dir, "out")},
		Workspace: dir, ProcDir: filepath.Join(dir, "procs"), KeepRecords: os.Getenv("PG_PROCESS_KEEP") == "1",
	}, o, e)
	os.Exit(0)
}

func pidIn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// kill -9 of the harness: the check's main process dies with it (parent-
// death signal); the record it left names the process group (and cgroup),
// and lock.Reap, as 'events unlock' runs it, kills the rest: the writer in
// the group and, in a cgroup, the setsid'd one too. A harness that keeps
// its record files (KeepRecords, an agent session's) leaves nothing
// either once reaped: its slots are swept with the records.
func TestHarnessDeathLeavesNoCheckProcesses(t *testing.T) {
	for _, mode := range []string{"cgroup", "process-group", "cgroup-kept"} {
		t.Run(mode, func(t *testing.T) {
			kept := strings.HasSuffix(mode, "-kept")
			mode := strings.TrimSuffix(mode, "-kept")
			dir := t.TempDir()
			h := exec.Command(os.Args[0], "-test.run=^$")
			h.Env = append(os.Environ(), "PG_PROCESS_HARNESS="+dir, "PG_PROCESS_HELPER="+helper)
			if mode == "process-group" {
				h.Env = append(h.Env, "PG_PROCESS_NOCGROUP=1")
			}
			if kept {
				h.Env = append(h.Env, "PG_PROCESS_KEEP=1")
			}
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out", "1")
			t.Cleanup(func() {
				h.Process.Kill()
				h.Wait()
				for _, n := range []string{"main", "group", "escaped"} {
					if b, err := os.ReadFile(filepath.Join(out, n+".pid")); err == nil {
						if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 1 {
							killStray(pid)
						}
					}
				}
			})
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(out, "ready")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the check did not start")
				}
				time.Sleep(5 * time.Millisecond)
			}
			main, group, escaped := pidIn(t, filepath.Join(out, "main.pid")), pidIn(t, filepath.Join(out, "group.pid")), pidIn(t, filepath.Join(out, "escaped.pid"))
			if err := h.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			h.Wait()
			if !gone(main) {
				t.Fatalf("the check's main process %d survived the harness", main)
			}
			paths, err := lock.GroupPaths(filepath.Join(dir, "procs"))
			if err != nil || len(paths) != 1 {
				t.Fatalf("records %v, %v", paths, err)
			}
			g, err := lock.ReadGroup(paths[0])
			if err == nil && mode == "cgroup" && g.Containment != lock.ContainCgroup {
				requireCgroupRecord(t, g)
			}
			if err != nil || g.PGID != main || g.Check != "tree" || g.Containment != mode || (g.Cgroup != "") != (mode == "cgroup") {
				t.Fatalf("record %+v, %v", g, err)
			}
			if !lock.Running(group) {
				t.Fatal("the group writer died before the reap: the test proves nothing")
			}
			ks, err := lock.Reap(filepath.Join(dir, "procs"), "unlock", time.Now(), true)
			if err != nil || len(ks) != 1 || ks[0].Result != lock.ResultKilled {
				t.Fatalf("reap %+v, %v", ks, err)
			}
			if !gone(group) {
				t.Fatalf("the group writer %d survived the reap", group)
			}
			switch {
			case mode == "cgroup" && !gone(escaped):
				t.Fatalf("the setsid'd writer %d survived the cgroup kill", escaped)
			case mode == "process-group" && !lock.Running(escaped):
				t.Fatalf("the setsid'd writer %d died without a cgroup: what killed it?", escaped)
			}
			if paths, _ := lock.GroupPaths(filepath.Join(dir, "procs")); len(paths) != 0 {
				t.Fatalf("records left: %v", paths)
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, "procs")); len(ents) != 0 {
				t.Fatalf("files left in procs: %v", ents)
			}
		})
	}
}

// A harness that keeps its record files (KeepRecords) runs check after
// check through the same two slots: no record is left after each, no
// file is created after the first, and lock.DropSlots leaves the procs
// directory empty. Without KeepRecords nothing is left after each check.
func TestKeptRecordsAreReused(t *testing.T) {
	dir := t.TempDir()
	procs := filepath.Join(dir, "procs")
	defer lock.DropSlots(procs)
	for _, keep := range []bool{false, true} {
		var files []os.FileInfo
		for i := range 5 {
			r := run(t, context.Background(), runtime.Spec{CheckID: "c", Argv: []string{helper, "exit", "0"}, Workspace: dir, ProcDir: procs, KeepRecords: keep}, 0)
			want(t, r, runtime.Passed, 0)
			if paths, _ := lock.GroupPaths(procs); len(paths) != 0 {
				t.Fatalf("keep=%v: records left after check %d: %v", keep, i, paths)
			}
			ents, err := os.ReadDir(procs)
			if err != nil {
				t.Fatal(err)
			}
			if !keep {
				if len(ents) != 0 {
					t.Fatalf("files left after check %d: %v", i, ents)
				}
				continue
			}
			var now []os.FileInfo
			for _, e := range ents {
				fi, err := os.Stat(filepath.Join(procs, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				now = append(now, fi)
			}
			if i == 0 {
				files = now
				if len(files) == 0 || len(files) > 2 {
					t.Fatalf("after the first check: %v, want one or two slots", ents)
				}
				continue
			}
			if len(now) != len(files) {
				t.Fatalf("after check %d: %v, want the %d slots of the first", i, ents, len(files))
			}
			for j := range now {
				if !os.SameFile(now[j], files[j]) {
					t.Fatalf("after check %d: %s is a new file", i, ents[j].Name())
				}
			}
		}
	}
	lock.DropSlots(procs)
	if ents, _ := os.ReadDir(procs); len(ents) != 0 {
		t.Fatalf("after DropSlots: %v", ents)
	}
}

func requireCgroupRecord(t *testing.T, g lock.Group) {
	t.Helper()
	if os.Getenv("PROOFGATE_REQUIRE_CGROUP") == "1" {
		t.Fatalf("PROOFGATE_REQUIRE_CGROUP=1 but the containment was %s", g.Containment)
	}
	t.Skipf("no writable cgroup v2 here (containment %s)", g.Containment)
}

// Linux sends the parent-death signal when the thread that forked the
// child exits. Threads that exit around a running check (goroutines that
// lock their thread and return) must not kill it: Run keeps its forking
// thread locked until the check is reaped.
func TestThreadExitsDoNotKillTheCheck(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				done := make(chan struct{})
				go func() {
					goruntime.LockOSThread() // never unlocked: the thread exits with the goroutine
					close(done)
				}()
				<-done
				time.Sleep(time.Millisecond)
			}
		}()
	}
	var rs []result
	var mu sync.Mutex
	var runs sync.WaitGroup
	for range 4 {
		runs.Add(1)
		go func() {
			defer runs.Done()
			r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "sleep", "300ms"}}, 0)
			mu.Lock()
			rs = append(rs, r)
			mu.Unlock()
		}()
	}
	runs.Wait()
	close(stop)
	wg.Wait()
	for _, r := range rs {
		want(t, r, runtime.Passed, 0)
	}
}
