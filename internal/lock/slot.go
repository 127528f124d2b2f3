package lock

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// A record slot is a process-record file kept for reuse by a harness that
// records many checks in a row into one procs directory (an agent
// session's recorder: two records per tool call, ADR 0028). It lives
// beside the records under a name GroupPaths never lists,
// .slot-<pid>-<hex>.json, and stays open. Publish rewrites it in place and
// links it in as a fresh record name; Unpublish unlinks that name again.
// No file is created or deleted per check, so no inode is allocated or
// freed: on ext4 without a journal every new inode is searched for past
// each inode freed in the last one to six minutes (recently_deleted), the
// costliest part of a governed call outside its fsyncs.
//
// What a reader sees is unchanged: a record name is linked only to bytes
// that were complete before the link, and they are not rewritten while it
// is linked (Publish refuses a slot that is still linked). A reader that
// opened a record just before Unpublish may read the slot's next record,
// or a torn mix that parses, through its open descriptor; so ReadGroup
// checks, after reading, that the name still is the file it read
// (ErrRecordGone otherwise): the rewrite comes after the unlink, and a
// slot is never linked under the same name twice.
//
// A slot left by a harness that died (nlink 1, its owner provably dead) is
// removed by Reap and by the next TakeSlot of the directory (sweepSlots).
type Slot struct {
	dir    string
	path   string // the kept name
	f      *os.File
	size   int64
	record string // the record name it is linked as, "" when unpublished
}

// slotPrefix starts a kept slot's name:
// .slot-<pid namespace>-<pid>-<start>-<16 hex>.json, the owner's pid
// namespace inode (0 where unknown), pid and start time (clock ticks
// since boot): what sweepSlots judges the owner by. The name, not the
// content, because the content of an unpublished slot is being rewritten
// whenever its owner publishes it, and a torn read can parse (as another
// owner's record, say one from another boot).
const slotPrefix = ".slot-"

// minSlotSize is what a slot's first record is padded to.
const minSlotSize = 512

// Idle slots are pooled per directory, bounded: maxIdleSlots per
// directory, maxSlotDirs directories (the least recently used
// directory's slots are discarded first).
const (
	maxIdleSlots = 8
	maxSlotDirs  = 16
)

type slotPool struct {
	sync.Mutex
	idle  map[string][]*Slot
	order []string // directories, least recently used first
}

var pool slotPool

// take pops an idle slot of dir, nil when there is none.
func (p *slotPool) take(dir string) *Slot {
	p.Lock()
	defer p.Unlock()
	ss := p.idle[dir]
	if len(ss) == 0 {
		return nil
	}
	s := ss[len(ss)-1]
	p.idle[dir] = ss[:len(ss)-1]
	return s
}

// put pools s and returns the slots that no longer fit, for the caller
// to close outside the lock.
func (p *slotPool) put(s *Slot) []*Slot {
	p.Lock()
	defer p.Unlock()
	if p.idle == nil {
		p.idle = map[string][]*Slot{}
	}
	if len(p.idle[s.dir]) >= maxIdleSlots {
		return []*Slot{s}
	}
	p.idle[s.dir] = append(p.idle[s.dir], s)
	p.order = append(removeDir(p.order, s.dir), s.dir)
	var out []*Slot
	for len(p.order) > maxSlotDirs {
		old := p.order[0]
		p.order = p.order[1:]
		out = append(out, p.idle[old]...)
		delete(p.idle, old)
	}
	return out
}

// drop removes dir's idle slots from the pool and returns them.
func (p *slotPool) drop(dir string) []*Slot {
	p.Lock()
	defer p.Unlock()
	ss := p.idle[dir]
	delete(p.idle, dir)
	p.order = removeDir(p.order, dir)
	return ss
}

// TakeSlot returns an idle slot of dir, or a new one (creating dir).
func TakeSlot(dir string) (*Slot, error) {
	if s := pool.take(dir); s != nil {
		return s, nil
	}
	return newSlot(dir)
}

func newSlot(dir string) (*Slot, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("process record slot: %w", err)
	}
	sweepSlots(dir)
	pid, start, _, err := selfProc()
	if err != nil {
		return nil, fmt.Errorf("process record slot: %w", err)
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s%d-%d-%d-%s.json", slotPrefix, pidNamespace(), pid, start, hex.EncodeToString(rnd[:]))
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("process record slot: %w", err)
	}
	return &Slot{dir: dir, path: p, f: f}, nil
}

// Publish writes g into the slot and links it in as a new record of the
// slot's directory, whose path it returns. The slot must be unpublished.
func (s *Slot) Publish(g Group) (string, error) {
	if s.record != "" {
		return "", fmt.Errorf("process record slot %s: still linked as %s", s.path, s.record)
	}
	fi, err := s.f.Stat()
	if err != nil {
		return "", fmt.Errorf("process record slot %s: %w", s.path, err)
	}
	if n, ok := nlink(fi); !ok || n != 1 {
		return "", fmt.Errorf("process record slot %s: linked elsewhere", s.path)
	}
	raw, err := json.Marshal(g)
	if err != nil {
		return "", fmt.Errorf("process record slot %s: %w", s.path, err)
	}
	// In place and never truncated (ext4 writes a file truncated to zero
	// back at once, auto_da_alloc): a shorter record is padded with
	// spaces, which JSON allows, to the slot's size (at least
	// minSlotSize, so that most later records fit).
	raw = pad(append(raw, '\n'), max(int(s.size), minSlotSize))
	if len(raw) > maxGroupFile {
		return "", fmt.Errorf("process record slot %s: record larger than %d bytes", s.path, maxGroupFile)
	}
	if _, err := s.f.WriteAt(raw, 0); err != nil {
		return "", fmt.Errorf("process record slot %s: %w", s.path, err)
	}
	s.size = max(s.size, int64(len(raw)))
	for range 3 {
		p := NewGroupPath(s.dir)
		err = os.Link(s.path, p)
		if err == nil {
			s.record = p
			return p, nil
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return "", fmt.Errorf("process record: %w", err)
}

// Unpublish removes the record name the slot is linked as, when it still
// is the slot (a record replaced meanwhile is left alone, and the slot is
// unpublished all the same).
func (s *Slot) Unpublish() error {
	if s.record == "" {
		return nil
	}
	p := s.record
	s.record = ""
	cur, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("process record: %w", err)
	}
	mine, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("process record slot %s: %w", s.path, err)
	}
	if !os.SameFile(cur, mine) {
		return nil
	}
	return RemoveGroup(p)
}

// Put returns an unpublished slot to the pool; a published one, or one
// beyond the pool's bounds, is discarded.
func (s *Slot) Put() {
	if s.record != "" {
		s.Discard()
		return
	}
	for _, o := range pool.put(s) {
		o.close()
	}
}

// Discard unpublishes the slot and removes it.
func (s *Slot) Discard() {
	_ = s.Unpublish()
	s.close()
}

func (s *Slot) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
		os.Remove(s.path)
	}
}

// DropSlots removes this process's idle slots of dir: for a harness done
// recording into it (an agent session that ended).
func DropSlots(dir string) {
	for _, s := range pool.drop(dir) {
		s.close()
	}
}

func removeDir(order []string, dir string) []string {
	out := order[:0]
	for _, d := range order {
		if d != dir {
			out = append(out, d)
		}
	}
	return out
}

// sweepSlots removes the slots in dir whose owner, judged by the slot's
// name, is provably dead: in this pid namespace, its pid gone, a zombie
// or running another process (another start time), or last written
// before this boot; and that are not linked as a record (Reap judges
// the record). Anything it cannot judge stays.
func sweepSlots(dir string) {
	ns := pidNamespace()
	if ns == 0 {
		return
	}
	sweepUnlinked(filepath.Join(dir, slotPrefix+"*.json"), func(m string, fi fs.FileInfo) bool {
		sns, pid, start, ok := parseSlotName(filepath.Base(m))
		return ok && sns == ns && (BeforeBoot(fi.ModTime()) || slotOwnerDead(pid, start))
	})
}

// parseSlotName reads the owner from a slot's name.
func parseSlotName(name string) (ns uint64, pid int, start uint64, ok bool) {
	f := strings.Split(strings.TrimSuffix(strings.TrimPrefix(name, slotPrefix), ".json"), "-")
	if len(f) != 4 {
		return 0, 0, 0, false
	}
	ns, err1 := strconv.ParseUint(f[0], 10, 64)
	pid, err2 := strconv.Atoi(f[1])
	start, err3 := strconv.ParseUint(f[2], 10, 64)
	if errors.Join(err1, err2, err3) != nil || pid <= 0 {
		return 0, 0, 0, false
	}
	return ns, pid, start, true
}

// slotOwnerDead reports whether pid with start time start is provably
// dead in this pid namespace.
func slotOwnerDead(pid int, start uint64) bool {
	st, state, err := procStat(pid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err != nil:
		return false
	}
	return state == 'Z' || state == 'X' || st != start
}

var pidNS = sync.OnceValue(func() uint64 {
	l, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return 0
	}
	v, ok := strings.CutPrefix(l, "pid:[")
	v, ok2 := strings.CutSuffix(v, "]")
	n, err := strconv.ParseUint(v, 10, 64)
	if !ok || !ok2 || err != nil {
		return 0
	}
	return n
})

// pidNamespace is the inode of this process's pid namespace, 0 where the
// system does not say (then slots are never swept: they are only files).
func pidNamespace() uint64 { return pidNS() }
