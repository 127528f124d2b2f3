package lock

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A lease holds while its owner lives, does not exclude another lease or
// the lock, and holds nothing once its owner is dead; an unreadable one
// holds (nothing is reclaimed on a guess).
func TestLease(t *testing.T) {
	dir := t.TempDir()
	lp := filepath.Join(dir, "events.lock")
	if _, err := TakeLease(lp, ""); err == nil {
		t.Fatal("a lease without a purpose")
	}
	if _, err := TakeLease(lp, strings.Repeat("x", maxPurpose+1)); err == nil {
		t.Fatal("an oversized purpose")
	}
	a, err := TakeLease(lp, "evidence collect")
	if err != nil {
		t.Fatal(err)
	}
	b, err := TakeLease(lp, "evidence collect")
	if err != nil {
		t.Fatal("a second lease beside the first:", err)
	}
	lk, err := Acquire(lp)
	if err != nil {
		t.Fatal("the lock beside a lease:", err)
	}
	lk.Release()
	held, err := LiveLeases(lp)
	if err != nil || len(held) != 2 || held[0].Info.Owner.PID != os.Getpid() || held[0].Info.Purpose != "evidence collect" {
		t.Fatalf("live leases %+v %v", held, err)
	}
	if d := held[0].Describe(); !strings.Contains(d, "evidence collect, pid ") {
		t.Fatalf("describe: %s", d)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if held, _ := LiveLeases(lp); len(held) != 0 {
		t.Fatalf("released leases hold: %+v", held)
	}

	// A dead owner: a process that exited.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	o, err := Self(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	o.PID = cmd.Process.Pid
	raw, _ := json.Marshal(LeaseInfo{Owner: o, Purpose: "evidence collect"})
	dead := lp + leaseMid + "1.00"
	os.WriteFile(dead, raw, 0o644)
	if held, _ := LiveLeases(lp); len(held) != 0 {
		t.Fatalf("a dead owner's lease holds: %+v", held)
	}
	// The same pid with another start time (reused): dead too.
	o.PID, o.Start = os.Getpid(), o.Start+1
	raw, _ = json.Marshal(LeaseInfo{Owner: o, Purpose: "evidence collect"})
	os.WriteFile(dead, raw, 0o644)
	if held, _ := LiveLeases(lp); len(held) != 0 {
		t.Fatalf("a reused pid's lease holds: %+v", held)
	}
	// The next lease removes it; its own stays.
	c, err := TakeLease(lp, "evidence collect")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("a dead owner's lease survived the next lease: %v", err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dead, raw, 0o644)
	// Unreadable: torn, unknown member, oversized. Each holds.
	for _, body := range []string{`{"owner":`, `{"owner":{},"purpose":"x","extra":1}`, strings.Repeat(" ", maxLockFile+1)} {
		os.WriteFile(dead, []byte(body), 0o644)
		held, err := LiveLeases(lp)
		if err != nil || len(held) != 1 || held[0].Err == nil || !strings.Contains(held[0].Describe(), "unreadable lease") {
			t.Fatalf("unreadable lease %q: %+v %v", body[:min(len(body), 20)], held, err)
		}
	}
	// A FIFO planted as a lease: refused without blocking, and it holds.
	os.Remove(dead)
	if err := mkfifo(dead); err != nil {
		t.Fatal(err)
	}
	done := make(chan []HeldLease, 1)
	go func() { h, _ := LiveLeases(lp); done <- h }()
	select {
	case held := <-done:
		if len(held) != 1 || held[0].Err == nil {
			t.Fatalf("a FIFO lease: %+v", held)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO lease blocks")
	}
	// A lease's temporary file is not a lease.
	os.Remove(dead)
	os.WriteFile(lp+leaseMid+"1.00.1.00.tmp", []byte("{"), 0o644)
	if held, _ := LiveLeases(lp); len(held) != 0 {
		t.Fatalf("a temporary file holds: %+v", held)
	}
}

// A lock path with glob metacharacters finds its own leases only.
func TestLeaseGlobEscape(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a[b]*?")
	os.MkdirAll(dir, 0o755)
	lp := filepath.Join(dir, "events.lock")
	l, err := TakeLease(lp, "evidence collect")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if held, err := LiveLeases(lp); err != nil || len(held) != 1 {
		t.Fatalf("leases under a metacharacter path: %+v %v", held, err)
	}
}
