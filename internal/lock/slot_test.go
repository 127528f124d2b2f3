//go:build unix

package lock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func selfGroup(t *testing.T, check string) Group {
	t.Helper()
	o, err := Self(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return Group{Check: check, Owner: o, Containment: ContainGroup}
}

// slotNames lists the kept slot files in dir.
func slotNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range dirNames(t, dir) {
		if strings.HasPrefix(n, slotPrefix) {
			out = append(out, n)
		}
	}
	return out
}

// A published slot is a record like any other (GroupPaths lists it,
// ReadGroup reads it) under a fresh name; the slot itself is never
// listed; a published slot is not rewritten; Unpublish removes the record
// name and keeps the file.
func TestSlotPublishUnpublish(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "procs")
	s, err := TakeSlot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	long := selfGroup(t, strings.Repeat("x", 900)) // longer than the slot's first size
	p, err := s.Publish(long)
	if err != nil {
		t.Fatal(err)
	}
	if paths, err := GroupPaths(dir); err != nil || len(paths) != 1 || paths[0] != p {
		t.Fatalf("records %v %v, want [%s]", paths, err, p)
	}
	if g, err := ReadGroup(p); err != nil || g.Check != long.Check {
		t.Fatalf("read back %+v %v", g, err)
	}
	if _, err := s.Publish(long); err == nil {
		t.Fatal("a published slot was rewritten")
	}
	if err := s.Unpublish(); err != nil {
		t.Fatal(err)
	}
	if paths, _ := GroupPaths(dir); len(paths) != 0 {
		t.Fatalf("after Unpublish: records %v", paths)
	}
	short := selfGroup(t, "short") // padded to the slot's size
	p2, err := s.Publish(short)
	if err != nil {
		t.Fatal(err)
	}
	if p2 == p {
		t.Fatal("republished under the same record name")
	}
	if g, err := ReadGroup(p2); err != nil || g.Check != "short" {
		t.Fatalf("a shorter record over a longer one reads %+v %v", g, err)
	}
	if fi, _ := os.Stat(p2); fi.Size() < int64(len(long.Check)) {
		t.Fatalf("the slot was truncated to %d bytes", fi.Size())
	}
	if names := slotNames(t, dir); len(names) != 1 {
		t.Fatalf("slot files %v, want one", names)
	}
}

// Taken and put back a hundred times, one slot serves every record: the
// same inode, no file created or removed.
func TestSlotPoolReusesOneFile(t *testing.T) {
	dir := t.TempDir()
	defer DropSlots(dir)
	var first os.FileInfo
	for i := range 100 {
		s, err := TakeSlot(dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Publish(selfGroup(t, "c"))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = fi
		} else if !os.SameFile(first, fi) {
			t.Fatalf("record %d is another file", i)
		}
		if err := s.Unpublish(); err != nil {
			t.Fatal(err)
		}
		s.Put()
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Fatalf("after 100 records the directory holds %v", names)
	}
	DropSlots(dir)
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("after DropSlots: %v", names)
	}
}

// The pool holds at most maxIdleSlots per directory; the rest are removed.
func TestSlotPoolIsBounded(t *testing.T) {
	dir := t.TempDir()
	defer DropSlots(dir)
	var ss []*Slot
	for range maxIdleSlots + 3 {
		s, err := newSlot(dir)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	for _, s := range ss {
		s.Put()
	}
	if names := slotNames(t, dir); len(names) != maxIdleSlots {
		t.Fatalf("%d slot files kept, want %d", len(names), maxIdleSlots)
	}
}

// A slot put back while still published is discarded, record and all.
func TestSlotPutPublishedDiscards(t *testing.T) {
	dir := t.TempDir()
	s, err := TakeSlot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish(selfGroup(t, "c")); err != nil {
		t.Fatal(err)
	}
	s.Put()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
}

// Unpublish leaves alone a record name that is no longer the slot (a
// reaper rewrote it, by rename).
func TestSlotUnpublishLeavesReplacedRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := TakeSlot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	p, err := s.Publish(selfGroup(t, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteGroup(p, selfGroup(t, "rewritten")); err != nil {
		t.Fatal(err)
	}
	if err := s.Unpublish(); err != nil {
		t.Fatal(err)
	}
	if g, err := ReadGroup(p); err != nil || g.Check != "rewritten" {
		t.Fatalf("the replaced record: %+v %v", g, err)
	}
}

// Slots of a harness that died are removed by the next new slot of the
// directory and by Reap; a live harness's slot, and a dead harness's slot
// still linked as a record, stay (Reap handles the record, then the slot).
func TestSlotsOfDeadHarnessAreSwept(t *testing.T) {
	dir := t.TempDir()
	live := startHelper(t, "slot", dir)
	if l := live.line(t); !strings.HasPrefix(l, "locked") {
		t.Fatal(l)
	}
	liveSlots := slotNames(t, dir)
	dead := startHelper(t, "slot", dir)
	if l := dead.line(t); !strings.HasPrefix(l, "locked") {
		t.Fatal(l)
	}
	published := startHelper(t, "slotpublished", dir)
	if l := published.line(t); !strings.HasPrefix(l, "locked") {
		t.Fatal(l)
	}
	for _, c := range []*child{dead, published} {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	if n := len(slotNames(t, dir)); n != 3 {
		t.Fatalf("%d slots before the sweep, want 3", n)
	}
	s, err := newSlot(dir) // sweeps
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	// live's, the published dead one's (linked as a record), the new one
	if n := len(slotNames(t, dir)); n != 3 {
		t.Fatalf("after a new slot: %v", slotNames(t, dir))
	}
	ks, err := Reap(dir, "gc", time.Now(), true)
	if err != nil || len(ks) != 1 || ks[0].Result != ResultGone {
		t.Fatalf("reap: %+v %v, want the dead helper's published record, gone", ks, err)
	}
	if _, err := Reap(dir, "gc", time.Now(), true); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{filepath.Base(s.path): true, liveSlots[0]: true}
	got := slotNames(t, dir)
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Fatalf("slots %v, want the live helper's and this process's", got)
	}
	if paths, _ := GroupPaths(dir); len(paths) != 0 {
		t.Fatalf("records %v left", paths)
	}
}

// Reap never fails on a live harness publishing and unpublishing slots
// under it: a record that vanished while Reap read it (its slot rewritten
// through Reap's open descriptor, maybe) is skipped, and what it reads is
// always a live owner's record.
func TestReapWhileSlotsChurn(t *testing.T) {
	dir := t.TempDir()
	defer DropSlots(dir)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var churned atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := selfGroup(t, "churn")
			for !stop.Load() {
				s, err := TakeSlot(dir)
				if err != nil {
					t.Error(err)
					return
				}
				g.Check = strings.Repeat("c", int(churned.Add(1)%300)) // records of varying length
				if _, err := s.Publish(g); err != nil {
					t.Error(err)
					return
				}
				if err := s.Unpublish(); err != nil {
					t.Error(err)
					return
				}
				s.Put()
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	reaps := 0
	for ; time.Now().Before(deadline); reaps++ {
		ks, err := Reap(dir, "gc", time.Now(), false)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("reap %d, after %d records: %v", reaps, churned.Load(), err)
		}
		for _, k := range ks {
			if k.Result != ResultOwnerLive {
				t.Fatalf("reap of a live harness's record: %+v", k)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d reaps over %d records", reaps, churned.Load())
}

// A reader whose open descriptor outlives the record name reads the
// slot's next record: ReadGroup reports the record gone instead of
// returning those bytes under the old name.
func TestReadGroupOfRepublishedSlotIsGone(t *testing.T) {
	dir := t.TempDir()
	s, err := TakeSlot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	p, err := s.Publish(selfGroup(t, "first"))
	if err != nil {
		t.Fatal(err)
	}
	openedHook = func(string) {
		if err := s.Unpublish(); err != nil {
			t.Error(err)
		}
		if _, err := s.Publish(selfGroup(t, "second")); err != nil {
			t.Error(err)
		}
	}
	defer func() { openedHook = nil }()
	if g, err := ReadGroup(p); !errors.Is(err, ErrRecordGone) {
		t.Fatalf("read %+v %v, want ErrRecordGone", g, err)
	}
}
