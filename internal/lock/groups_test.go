//go:build unix

package lock

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadOwner is an owner that is provably dead: this process with another
// start time (a reused pid).
func deadOwner(t *testing.T) Owner {
	t.Helper()
	o, err := Self(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	o.Start++
	return o
}

// sleeper is a process this test started; done closes once it is reaped.
type sleeper struct {
	pid  int
	done chan struct{}
}

// leader starts "sleep 30" as the leader of its own process group.
func leader(t *testing.T) (sleeper, uint64) {
	t.Helper()
	c := exec.Command("sleep", "30")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ch := sleeper{pid: c.Process.Pid, done: make(chan struct{})}
	go func() { c.Wait(); close(ch.done) }()
	t.Cleanup(func() { c.Process.Kill(); <-ch.done })
	start, err := StartTime(ch.pid)
	if err != nil {
		t.Fatal(err)
	}
	return ch, start
}

// exitedWithin reports whether c exits within d.
func exitedWithin(c sleeper, d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(d):
		return false
	}
}

func writeRecord(t *testing.T, dir string, g Group) string {
	t.Helper()
	p := NewGroupPath(dir)
	if err := WriteGroup(p, g); err != nil {
		t.Fatal(err)
	}
	return p
}

// A record whose pgid is now the pid of an unrelated live process (another
// start time) is never signalled, although its owner is dead.
func TestReapNeverSignalsAReusedPid(t *testing.T) {
	dir := t.TempDir()
	c, start := leader(t)
	p := writeRecord(t, dir, Group{Check: "unit", Owner: deadOwner(t), PGID: c.pid, Start: start + 1, Containment: ContainGroup})
	ks, err := Reap(dir, "gc", time.Now(), false)
	if err != nil || len(ks) != 1 || ks[0].Result != ResultPidReused {
		t.Fatalf("reap: %+v, %v", ks, err)
	}
	if exitedWithin(c, 200*time.Millisecond) {
		t.Fatalf("the unrelated process %d was signalled", c.pid)
	}
	g, err := ReadGroup(p)
	if err != nil || g.Reaped == nil || g.Reaped.By != "gc" || g.Reaped.Result != ResultPidReused {
		t.Fatalf("record after reap: %+v, %v", g, err)
	}
}

// The recorded group of a dead owner is killed; a live owner's is not.
func TestReapKillsOnlyDeadOwnersGroups(t *testing.T) {
	dir := t.TempDir()
	live, liveStart := leader(t)
	self, err := Self(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	writeRecord(t, dir, Group{Check: "live", Owner: self, PGID: live.pid, Start: liveStart, Containment: ContainGroup})
	dead, deadStart := leader(t)
	writeRecord(t, dir, Group{Check: "dead", Owner: deadOwner(t), PGID: dead.pid, Start: deadStart, Containment: ContainGroup})
	ks, err := Reap(dir, "unlock", time.Now(), true)
	if err != nil || len(ks) != 2 {
		t.Fatalf("reap: %+v, %v", ks, err)
	}
	got := map[string]string{}
	for _, k := range ks {
		got[k.Check] = k.Result
	}
	if got["live"] != ResultOwnerLive || got["dead"] != ResultKilled {
		t.Fatalf("results %v", got)
	}
	if !exitedWithin(dead, 2*time.Second) {
		t.Fatal("the dead owner's group survived")
	}
	if exitedWithin(live, 200*time.Millisecond) {
		t.Fatal("the live owner's group was signalled")
	}
	if paths, _ := GroupPaths(dir); len(paths) != 1 {
		t.Fatalf("records left: %v, want the live owner's only", paths)
	}
}

// A group whose leader is gone is still killed while members remain: the
// kernel keeps a pgid in use from being reused.
func TestReapKillsGroupWithoutLeader(t *testing.T) {
	dir := t.TempDir()
	sh := exec.Command("sh", "-c", `sleep 30 & echo $!; read x`)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := sh.StdinPipe()
	out, _ := sh.StdoutPipe()
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := StartTime(sh.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	member, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(member, syscall.SIGKILL) })
	in.Close()
	sh.Wait() // the leader is gone and reaped
	writeRecord(t, dir, Group{Check: "unit", Owner: deadOwner(t), PGID: sh.Process.Pid, Start: start, Containment: ContainGroup})
	ks, err := Reap(dir, "gc", time.Now(), false)
	if err != nil || len(ks) != 1 || ks[0].Result != ResultKilled {
		t.Fatalf("reap: %+v, %v", ks, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for Running(member) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if Running(member) {
		t.Fatalf("member %d of the leaderless group survived", member)
	}
	// Reaped again (by unlock after gc): gone now, reported as killed by gc.
	ks, err = Reap(dir, "unlock", time.Now(), true)
	if err != nil || len(ks) != 1 || ks[0].Result != ResultKilled || ks[0].By != "gc" {
		t.Fatalf("second reap: %+v, %v", ks, err)
	}
}

func TestReadGroupRefusesBadRecords(t *testing.T) {
	dir := t.TempDir()
	o := deadOwner(t)
	for name, g := range map[string]Group{
		"pgid 1":         {Check: "a", Owner: o, PGID: 1, Start: 5},
		"no start":       {Check: "a", Owner: o, PGID: 99},
		"foreign cgroup": {Check: "a", Owner: o, Cgroup: "/sys/fs/cgroup/system.slice"},
		"no owner":       {Check: "a", PGID: 99, Start: 5},
	} {
		p := writeRecord(t, dir, g)
		if _, err := ReadGroup(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
		os.Remove(p)
	}
	p := filepath.Join(dir, "proc-x.json")
	os.WriteFile(p, []byte(`{"check":"a","Check":"b"}`), 0o644)
	if _, err := ReadGroup(p); err == nil {
		t.Error("unknown member accepted")
	}
}

// Process records are not fsynced (ADR 0019). A record a crash left torn
// (last modified before this boot) names processes that cannot be alive:
// Reap removes it and goes on. A torn record from this boot is still an
// error: what it names cannot be judged.
func TestReapTornRecords(t *testing.T) {
	dir := t.TempDir()
	torn := filepath.Join(dir, "proc-torn.json")
	os.WriteFile(torn, []byte(`{"check":"a","own`), 0o644)
	old := preBoot(t)
	if err := os.Chtimes(torn, old, old); err != nil {
		t.Fatal(err)
	}
	kept := writeRecord(t, dir, Group{Check: "b", Owner: deadOwner(t)})
	ks, err := Reap(dir, "test", time.Now(), true)
	if err != nil {
		t.Fatalf("reap beside a record torn before boot: %v", err)
	}
	if len(ks) != 1 || ks[0].Check != "b" {
		t.Fatalf("reaped %+v, want only check b", ks)
	}
	for _, p := range []string{torn, kept} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left: %v", p, err)
		}
	}
	os.WriteFile(torn, []byte(`{"check":"a","own`), 0o644)
	if _, err := Reap(dir, "test", time.Now(), true); err == nil {
		t.Fatal("a torn record of this boot was reaped")
	}
	if _, err := os.Stat(torn); err != nil {
		t.Fatalf("torn record of this boot removed: %v", err)
	}
}

// GroupRuns (a session's retry asks it) says true while the recorded
// leader or, once it is gone, a member of its group runs; false once
// Reap has killed them (Reap waits until they are dead), for a reused pid
// and for a record from another boot.
func TestGroupRuns(t *testing.T) {
	sh := exec.Command("sh", "-c", `sleep 30 & echo $!; read x`)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, _ := sh.StdinPipe()
	out, _ := sh.StdoutPipe()
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := StartTime(sh.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	member, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(member, syscall.SIGKILL) })
	g := Group{Check: "a-1", Owner: deadOwner(t), PGID: sh.Process.Pid, Start: start, Containment: ContainGroup}
	if runs, err := GroupRuns(g); !runs || err != nil {
		t.Fatalf("leader running: %v %v", runs, err)
	}
	reused := g // its pid now leads another process
	reused.Start++
	if runs, err := GroupRuns(reused); runs || err != nil {
		t.Fatalf("a record whose leader pid was reused: %v %v", runs, err)
	}
	in.Close()
	sh.Wait() // the leader is gone and reaped; its member sleeps on
	if runs, err := GroupRuns(g); !runs || err != nil {
		t.Fatalf("leaderless group with a member: %v %v", runs, err)
	}
	rebooted := g
	rebooted.Owner.BootID = "00000000-0000-0000-0000-000000000000"
	if runs, err := GroupRuns(rebooted); runs || err != nil {
		t.Fatalf("a record from another boot: %v %v", runs, err)
	}
	dir := t.TempDir()
	writeRecord(t, dir, g)
	if ks, err := Reap(dir, "resume", time.Now(), true); err != nil || len(ks) != 1 || ks[0].Result != ResultKilled {
		t.Fatalf("reap: %+v %v", ks, err)
	}
	if runs, err := GroupRuns(g); runs || err != nil {
		t.Fatalf("right after Reap killed it: %v %v", runs, err)
	}
}
