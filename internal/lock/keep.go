package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A re-takable lock (AcquireKept) is for a process that takes the same
// lock many times in a row (an agent session's recorder takes it twice per
// tool call, ADR 0019/0020): the owner file it links into place is kept
// beside the lock between holds, <lock>.<pid>.<hex>.tmp, so that Retake
// rewrites it in place (no new file) and takes the lock with one link(2).
// Mutual exclusion is unchanged: link(2) fails on an existing name, and
// the lock file's content, judged by Read, Alive and Break, is the owner
// with the time of this hold. A kept file left by a process that died is
// removed by the next AcquireKept of the same lock once its owner is
// provably dead (sweepKept).

var self struct {
	sync.Mutex
	pid   int
	start uint64
	boot  string
}

// selfProc is this process's pid, start time and boot id, read once.
func selfProc() (int, uint64, string, error) {
	self.Lock()
	defer self.Unlock()
	pid := os.Getpid()
	if self.pid == pid && self.boot != "" {
		return pid, self.start, self.boot, nil
	}
	start, err := startTime(pid)
	if err != nil {
		return 0, 0, "", err
	}
	boot, err := bootID()
	if err != nil {
		return 0, 0, "", err
	}
	self.pid, self.start, self.boot = pid, start, boot
	return pid, start, boot, nil
}

// AcquireKept is Acquire, keeping the owner file for Retake after Release.
// Discard removes it when the process is done with the lock.
func AcquireKept(path string) (*Lock, error) {
	sweepKept(path)
	o, raw, err := selfRaw()
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	raw = pad(raw, keptSize)
	tmp, err := writeTemp(path, raw)
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	kf, err := os.OpenFile(tmp, os.O_WRONLY, 0)
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	l := &Lock{path: path, raw: raw, owner: o, tmp: tmp, kf: kf}
	if err := l.link(); err != nil {
		kf.Close()
		os.Remove(tmp)
		return nil, err
	}
	return l, nil
}

// releaseKept releases a kept lock: the file in place must be the kept
// file itself (same inode: this hold's owner, as written), then it is
// unlinked; the kept file stays, open, for Retake.
func (l *Lock) releaseKept() error {
	cur, err := os.Lstat(l.path)
	if err != nil {
		return fmt.Errorf("release %s: %w", l.path, err)
	}
	mine, err := l.kf.Stat()
	if err != nil {
		return fmt.Errorf("release %s: %w", l.path, err)
	}
	if !os.SameFile(cur, mine) {
		return fmt.Errorf("release %s: the lock was replaced by another owner", l.path)
	}
	if err := os.Remove(l.path); err != nil {
		return fmt.Errorf("release %s: %w", l.path, err)
	}
	return nil
}

// Retake takes a released kept lock again: the kept file is rewritten
// with the owner and the time of this hold and linked into place. Another
// owner holding the lock is a *HeldError, as for Acquire; the kept file
// stays for a later Retake.
func (l *Lock) Retake() error {
	if l.tmp == "" {
		return fmt.Errorf("retake %s: the lock was not acquired to be kept", l.path)
	}
	fi, err := l.kf.Stat()
	if err != nil {
		return fmt.Errorf("retake %s: %w", l.path, err)
	}
	if n, ok := nlink(fi); !ok || n != 1 || !fi.Mode().IsRegular() {
		// still linked as the lock (never released) or replaced
		return fmt.Errorf("retake %s: the kept owner file is still linked or not a file", l.path)
	}
	o, raw, err := selfRaw()
	if err != nil {
		return fmt.Errorf("retake %s: %w", l.path, err)
	}
	// Rewritten in place and never truncated: ext4 writes a file truncated
	// to zero back at once (auto_da_alloc), which costs more than the rest
	// of a hold. A shorter owner is padded with spaces to the file's size.
	raw = pad(raw, int(fi.Size()))
	if _, err := l.kf.WriteAt(raw, 0); err != nil {
		return fmt.Errorf("retake %s: %w", l.path, err)
	}
	l.raw, l.owner = raw, o
	return l.link()
}

// keptSize is what a kept owner file is padded to at first, so that a
// later owner line (another time) fits without growing it.
const keptSize = 256

// pad pads the owner line raw (JSON, then a newline) with spaces before
// the newline to size bytes; a longer raw is returned as it is.
func pad(raw []byte, size int) []byte {
	if len(raw) >= size {
		return raw
	}
	out := make([]byte, 0, size)
	out = append(out, raw[:len(raw)-1]...)
	for len(out) < size-1 {
		out = append(out, ' ')
	}
	return append(out, '\n')
}

// Kept reports whether the lock keeps its owner file for Retake.
func (l *Lock) Kept() bool { return l.tmp != "" }

// Discard removes the kept owner file (nothing for a lock not kept). The
// lock itself must be released first; a held lock is not touched.
func (l *Lock) Discard() {
	if l.kf != nil {
		l.kf.Close()
		l.kf = nil
	}
	if l.tmp != "" {
		os.Remove(l.tmp)
		l.tmp = ""
	}
}

func selfRaw() (Owner, []byte, error) {
	o, err := Self(time.Now())
	if err != nil {
		return Owner{}, nil, err
	}
	raw, err := jsonLine(o)
	return o, raw, err
}

// link links the kept file into place, judging an existing lock as Acquire
// does.
func (l *Lock) link() error {
	for attempt := 0; ; attempt++ {
		err := os.Link(l.tmp, l.path)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("acquire %s: %w", l.path, err)
		}
		held, rerr := Read(l.path)
		switch {
		case rerr == nil:
			return &HeldError{Owner: held, Path: l.path}
		case errors.Is(rerr, os.ErrNotExist) && attempt < 3:
			continue // released meanwhile: try again
		case attempt < 3 && removeTorn(l.path):
			continue // torn by a crash before this boot: stale
		}
		return &HeldError{Path: l.path, Err: rerr}
	}
}

// maxKeptSweep bounds how many stray owner files one sweep looks at.
const maxKeptSweep = 64

// sweepKept removes owner files beside path (<lock>.<pid>.<hex>.tmp) of
// owners that are provably dead and no longer linked as the lock: what a
// process that kept its lock and died leaves. Anything it cannot judge
// stays.
func sweepKept(path string) {
	sweepUnlinked(path+".*.tmp", func(m string, _ fs.FileInfo) bool {
		if _, ok := ownerFilePID(path, m); !ok {
			return false
		}
		o, err := Read(m)
		return err == nil && !Alive(o)
	})
}

// ownerFilePID is the pid in the name of owner file m of the lock at
// path (<path>.<pid>.<hex>.tmp).
func ownerFilePID(path, m string) (int, bool) {
	mid := strings.TrimSuffix(strings.TrimPrefix(m, path+"."), ".tmp")
	ps, _, ok := strings.Cut(mid, ".")
	pid, err := strconv.Atoi(ps)
	return pid, ok && err == nil && pid > 0
}

// sweepUnlinked removes each file matching pattern (at most maxKeptSweep
// of them, else none) that is a regular file no other name links (a kept
// owner file linked as the lock, a slot linked as a record, is judged
// under that name) and that dead judges dead.
func sweepUnlinked(pattern string, dead func(m string, fi fs.FileInfo) bool) {
	matches, err := filepath.Glob(pattern)
	if err != nil || len(matches) > maxKeptSweep {
		return
	}
	for _, m := range matches {
		fi, err := os.Lstat(m)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if n, ok := nlink(fi); !ok || n != 1 {
			continue
		}
		if dead(m, fi) {
			os.Remove(m)
		}
	}
}

// SweepTemps removes the owner files beside the lock at path
// (<path>.<pid>.<hex>.tmp, plain or kept) that no process can still use:
// not linked as the lock, and their pid no process of this pid namespace
// has. What a process killed between writing its owner file and linking
// it leaves: the file may be empty or torn, and with no lock in place
// nothing else names that pid. A pid that exists (maybe reused) keeps its
// file, which is only a file.
func SweepTemps(path string) {
	if _, _, err := procStat(os.Getpid()); err != nil {
		return // no /proc here: no pid can be judged gone
	}
	sweepUnlinked(path+".*.tmp", func(m string, _ fs.FileInfo) bool {
		pid, ok := ownerFilePID(path, m)
		if !ok {
			return false
		}
		_, _, err := procStat(pid)
		return errors.Is(err, os.ErrNotExist)
	})
}
