package lock

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// The test binary doubles as the helper process: PG_LOCK_HELPER selects
// what it does instead of running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PG_LOCK_HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

var binding = eventlog.Binding{Run: "r1", Source: eventlog.Source{Commit: "c", Tree: "t"}, Contract: "sha256:" + strings.Repeat("0", 64)}

const raceEvents = 40

func helper(mode string) int {
	lockPath := os.Getenv("PG_LOCK_PATH")
	switch mode {
	case "hold":
		if _, err := Acquire(lockPath); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("locked", os.Getpid())
		time.Sleep(time.Minute)
		return 0
	case "holdkept", "keptreleased": // keep_test.go
		l, err := AcquireKept(lockPath)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		if mode == "keptreleased" {
			if err := l.Release(); err != nil {
				fmt.Println("error", err)
				return 1
			}
		}
		fmt.Println("locked", os.Getpid())
		time.Sleep(time.Minute)
		return 0
	case "slot", "slotpublished": // slot_test.go: lockPath is the procs dir
		s, err := TakeSlot(lockPath)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		o, err := Self(time.Now())
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		if _, err := s.Publish(Group{Check: "c", Owner: o, Containment: ContainGroup}); err != nil {
			fmt.Println("error", err)
			return 1
		}
		if mode == "slot" {
			if err := s.Unpublish(); err != nil {
				fmt.Println("error", err)
				return 1
			}
			s.Put()
		}
		fmt.Println("locked", os.Getpid())
		time.Sleep(time.Minute)
		return 0
	case "race":
		dir := filepath.Dir(lockPath)
		waitFile(filepath.Join(dir, "go"))
		l, err := Acquire(lockPath)
		var held *HeldError
		if errors.As(err, &held) {
			fmt.Println("held", held.Owner.PID)
			for err != nil { // wait for the winner, then write after it
				time.Sleep(5 * time.Millisecond)
				l, err = Acquire(lockPath)
				if err != nil && !errors.As(err, &held) {
					fmt.Println("error", err)
					return 1
				}
			}
		} else if err != nil {
			fmt.Println("error", err)
			return 1
		} else {
			fmt.Println("won", os.Getpid())
			waitFile(filepath.Join(dir, "stop"))
		}
		if err := appendEvents(filepath.Join(dir, "events.ndjson")); err != nil {
			fmt.Println("error", err)
			return 1
		}
		if err := l.Release(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("done")
		return 0
	}
	return 2
}

func appendEvents(path string) error {
	log, err := eventlog.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		log, err = eventlog.Create(path, binding)
	}
	if err != nil {
		return err
	}
	defer log.Close()
	for i := 0; i < raceEvents; i++ {
		if _, err := log.Append("check.finished", map[string]int{"pid": os.Getpid(), "i": i}); err != nil {
			return err
		}
	}
	return nil
}

func waitFile(path string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
}

type child struct {
	cmd   *exec.Cmd
	lines chan string
}

func startHelper(t *testing.T, mode, lockPath string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PG_LOCK_HELPER="+mode, "PG_LOCK_PATH="+lockPath)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

func (c *child) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatalf("helper %d exited without output", c.cmd.Process.Pid)
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %d said nothing", c.cmd.Process.Pid)
	}
	return ""
}

func refusal(t *testing.T, err error, reason string) {
	t.Helper()
	var br *BreakRefused
	if !errors.As(err, &br) || br.Reason != reason {
		t.Fatalf("got %v, want BreakRefused %q", err, reason)
	}
}

func TestHeldByLiveProcessThenKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.lock")
	c := startHelper(t, "hold", path)
	if l := c.line(t); l != fmt.Sprintf("locked %d", c.cmd.Process.Pid) {
		t.Fatalf("helper: %q", l)
	}
	_, err := Acquire(path)
	var held *HeldError
	if !errors.As(err, &held) || held.Owner.PID != c.cmd.Process.Pid || held.Path != path {
		t.Fatalf("second Acquire: %v", err)
	}
	host, _ := os.Hostname()
	for _, want := range []string{"pid " + strconv.Itoa(c.cmd.Process.Pid), host, "start ", "age "} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err, want)
		}
	}
	if !Alive(held.Owner) {
		t.Fatal("live owner reported dead")
	}
	_, err = Break(path, 0, time.Now().Add(time.Hour))
	refusal(t, err, RefusedAlive)

	// kill -9, leaving a zombie until reaped: already dead.
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); Alive(held.Owner); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("killed owner still alive")
		}
	}
	c.cmd.Wait()
	if Alive(held.Owner) {
		t.Fatal("reaped owner reported alive")
	}
	_, err = Break(path, time.Hour, time.Now())
	refusal(t, err, RefusedTooYoung)
	if _, err := os.Stat(path); err != nil {
		t.Fatal("a refused Break removed the lock")
	}
	o, err := Break(path, time.Millisecond, time.Now().Add(time.Second))
	if err != nil || o.PID != c.cmd.Process.Pid {
		t.Fatalf("Break of a dead owner: %v %+v", err, o)
	}
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after Break: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func writeOwner(t *testing.T, path string, o Owner) {
	t.Helper()
	raw, _ := json.Marshal(o)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPIDReused(t *testing.T) {
	self, err := Self(time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(self) {
		t.Fatal("this process reported dead")
	}
	path := filepath.Join(t.TempDir(), "events.lock")

	reused := self
	reused.Start++
	if Alive(reused) {
		t.Fatal("another start time must mean a reused pid")
	}
	writeOwner(t, path, reused)
	_, err = Break(path, time.Minute, time.Now())
	if err != nil {
		t.Fatalf("Break of a reused pid: %v", err)
	}

	rebooted := self
	rebooted.BootID = "00000000-0000-0000-0000-000000000000"
	if Alive(rebooted) {
		t.Fatal("another boot id must mean dead")
	}
	// Our own live lock is not breakable.
	writeOwner(t, path, self)
	_, err = Break(path, time.Minute, time.Now())
	refusal(t, err, RefusedAlive)
}

func TestForeignHost(t *testing.T) {
	self, _ := Self(time.Now().Add(-time.Hour))
	o := self
	o.Host = "build-agent-7"
	o.PID = 1 << 30 // no such pid here
	path := filepath.Join(t.TempDir(), "events.lock")
	writeOwner(t, path, o)
	if !Alive(o) {
		t.Fatal("an owner on another host cannot be proven dead")
	}
	_, err := Break(path, 0, time.Now())
	refusal(t, err, RefusedForeignHost)
	_, err = Acquire(path)
	var held *HeldError
	if !errors.As(err, &held) || held.Owner.Host != "build-agent-7" || !strings.Contains(err.Error(), "build-agent-7") {
		t.Fatalf("Acquire: %v", err)
	}
}

func TestUnreadable(t *testing.T) {
	self, _ := Self(time.Now().Add(-time.Hour))
	good, _ := json.Marshal(self)
	for name, content := range map[string]string{
		"garbage":       "not json at all",
		"empty":         "",
		"truncated":     string(good[:len(good)/2]),
		"unknown field": strings.Replace(string(good), `{"pid"`, `{"x":1,"pid"`, 1),
		"no pid":        strings.Replace(string(good), `"pid":`+strconv.Itoa(self.PID), `"pid":0`, 1),
		"huge":          strings.Repeat(" ", maxLockFile+1) + string(good),
		// encoding/json let the later pid win and matched PID to pid.
		"duplicate pid":    strings.Replace(string(good), `{"pid"`, `{"pid":1073741824,"pid"`, 1),
		"case-variant pid": strings.Replace(string(good), `{"pid"`, `{"PID":1073741824,"pid"`, 1),
		"trailing data":    string(good) + `{"pid":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.lock")
			os.WriteFile(path, []byte(content), 0o644)
			_, err := Break(path, 0, time.Now())
			refusal(t, err, RefusedUnreadable)
			if _, err := os.Stat(path); err != nil {
				t.Fatal("unreadable lock removed")
			}
			_, err = Acquire(path)
			var held *HeldError
			if !errors.As(err, &held) || held.Err == nil {
				t.Fatalf("Acquire over an unreadable lock: %v", err)
			}
		})
	}
}

func TestAcquireRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	start, _, err := procStat(os.Getpid())
	if err != nil || o.PID != os.Getpid() || o.Start != start || o.BootID == "" || time.Since(o.Created) > time.Minute {
		t.Fatalf("owner %+v (start %d, %v)", o, start, err)
	}
	if _, err := Acquire(path); err == nil {
		t.Fatal("the same lock acquired twice")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Release left the lock")
	}
	// Release refuses to remove another owner's lock.
	l, _ = Acquire(path)
	os.Remove(path)
	other := o
	other.PID++
	writeOwner(t, path, other)
	if err := l.Release(); err == nil {
		t.Fatal("Release removed a lock it does not own")
	}
	// No temp files are left behind.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries", len(ents))
	}
}

// TestRaceTwoProcesses: two real processes start at once; exactly one gets
// the lock, the other fails closed naming it, then writes after it. The log
// holds both writers' events with no duplicated seq.
func TestRaceTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.lock")
	a := startHelper(t, "race", path)
	b := startHelper(t, "race", path)
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	la, lb := a.line(t), b.line(t)
	var winner, loser *child
	var heldBy string
	switch {
	case strings.HasPrefix(la, "won") && strings.HasPrefix(lb, "held"):
		winner, loser, heldBy = a, b, lb
	case strings.HasPrefix(lb, "won") && strings.HasPrefix(la, "held"):
		winner, loser, heldBy = b, a, la
	default:
		t.Fatalf("want exactly one winner: %q / %q", la, lb)
	}
	if heldBy != fmt.Sprintf("held %d", winner.cmd.Process.Pid) {
		t.Fatalf("loser names %q, winner is %d", heldBy, winner.cmd.Process.Pid)
	}
	os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
	for _, c := range []*child{winner, loser} {
		if l := c.line(t); l != "done" {
			t.Fatalf("helper %d: %q", c.cmd.Process.Pid, l)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := eventlog.ReadFile(filepath.Join(dir, "events.ndjson"), &binding)
	if err != nil || len(evs) != 2*raceEvents {
		t.Fatalf("%v, %d events", err, len(evs))
	}
	seen := map[uint64]bool{}
	for i, e := range evs {
		if seen[e.Seq] || e.Seq != uint64(i+1) {
			t.Fatalf("event %d: seq %d", i, e.Seq)
		}
		seen[e.Seq] = true
		var d struct{ PID int }
		json.Unmarshal(e.Data, &d)
		want := winner.cmd.Process.Pid
		if i >= raceEvents {
			want = loser.cmd.Process.Pid
		}
		if d.PID != want {
			t.Fatalf("event %d written by %d, want %d (winner first)", i, d.PID, want)
		}
	}
}

// preBoot is a time before this machine's boot (/proc/stat btime).
func preBoot(t *testing.T) time.Time {
	t.Helper()
	b, err := bootTime()
	if err != nil {
		t.Fatal(err)
	}
	return b.Add(-time.Hour)
}

// A lock file is not fsynced (ADR 0019): a power loss or kernel crash may
// leave it empty or torn. Such a file last modified before this boot is
// stale: Acquire takes the lock over it, Break removes it (reported as no
// lock). The same bytes written since this boot stay refused (TestUnreadable).
func TestTornBeforeBoot(t *testing.T) {
	self, _ := Self(time.Now().Add(-time.Hour))
	good, _ := json.Marshal(self)
	for name, content := range map[string]string{
		"empty":     "",
		"truncated": string(good[:len(good)/2]),
		"zeros":     string(make([]byte, len(good))),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.lock")
			os.WriteFile(path, []byte(content), 0o644)
			old := preBoot(t)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			l, err := Acquire(path)
			if err != nil {
				t.Fatalf("Acquire over a lock torn before boot: %v", err)
			}
			if o, err := Read(path); err != nil || o.PID != os.Getpid() {
				t.Fatalf("the lock is not ours: %+v %v", o, err)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, []byte(content), 0o644)
			os.Chtimes(path, old, old)
			if _, err := Break(path, 0, time.Now()); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Break of a lock torn before boot: %v", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("torn lock left: %v", err)
			}
		})
	}
}

// Modified before boot is not enough on its own: a readable lock of a live
// owner (this process) is held whatever its mtime says.
func TestReadableBeforeBootIsJudgedByOwner(t *testing.T) {
	self, _ := Self(time.Now())
	good, _ := json.Marshal(self)
	path := filepath.Join(t.TempDir(), "events.lock")
	os.WriteFile(path, good, 0o644)
	old := preBoot(t)
	os.Chtimes(path, old, old)
	_, err := Acquire(path)
	var held *HeldError
	if !errors.As(err, &held) || held.Err != nil || held.Owner.PID != os.Getpid() {
		t.Fatalf("Acquire over a live readable lock: %v", err)
	}
	_, err = Break(path, 0, time.Now())
	refusal(t, err, RefusedAlive)
}
