// Package lock is the per-run writer lock (events.lock).
//
// The lock file holds its owner as JSON: pid, the process start time in
// clock ticks since boot (/proc/<pid>/stat field 22), the boot id, the host
// and the creation time. It is written to a temporary file and hard-linked
// into place, so it is never seen half-written and only one of several
// racing processes wins. Nothing here is fsynced (ADR 0019): a lock
// describes a live process, and no process survives the power loss or
// kernel crash an fsync protects against. After one, the lock file may be
// missing (no lock), hold a dead owner (another boot id: breakable), or be
// empty or torn: an unreadable lock file last modified before the current
// boot is stale and Acquire and Break remove it; one modified since is
// refused as unreadable, as no crash of this boot can have torn it. A lock is broken only when its owner is
// provably dead — the pid is gone, or it was reused (another start time or
// another boot) — on this host, and the lock is older than the caller says.
// Liveness is read from /proc (Linux).
package lock

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// maxLockFile bounds what Read accepts.
const maxLockFile = 4096

// Owner is who holds a lock.
type Owner struct {
	PID     int       `json:"pid"`
	Start   uint64    `json:"start"` // clock ticks since boot, /proc/<pid>/stat field 22
	BootID  string    `json:"boot_id"`
	Host    string    `json:"host"`
	Created time.Time `json:"created"`
}

// Lock is a held lock.
type Lock struct {
	path  string
	raw   []byte
	owner Owner
	tmp   string   // the owner file kept for Retake (AcquireKept), "" otherwise
	kf    *os.File // tmp, open for writing while kept
}

// Owner is the owner this lock was acquired with.
func (l *Lock) Owner() Owner { return l.owner }

// HeldError is returned by Acquire when another owner holds the lock.
type HeldError struct {
	Owner Owner
	Path  string
	Err   error // set when the existing lock file is unreadable
}

func (e *HeldError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s is held by an unreadable lock: %v", e.Path, e.Err)
	}
	age := time.Since(e.Owner.Created).Round(time.Second)
	return fmt.Sprintf("%s is held by pid %d on host %s (start %d, boot %s), age %s",
		e.Path, e.Owner.PID, e.Owner.Host, e.Owner.Start, e.Owner.BootID, age)
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *HeldError) Is(target error) bool { return target == exit.Refused }

func (e *HeldError) Unwrap() error { return e.Err }

// BreakRefused is returned by Break when the lock must stay.
type BreakRefused struct {
	Reason string // "alive", "too young", "foreign host", "unreadable"
	Owner  Owner
	Detail string
}

// Reasons Break refuses.
const (
	RefusedAlive       = "alive"
	RefusedTooYoung    = "too young"
	RefusedForeignHost = "foreign host"
	RefusedUnreadable  = "unreadable"
)

func (e *BreakRefused) Error() string {
	return fmt.Sprintf("lock not broken: %s: %s", e.Reason, e.Detail)
}

// Self describes the current process as a lock owner.
// The process's pid, start time and boot id do not change while it runs:
// they are read from /proc once (selfProc), the host name every time.
func Self(now time.Time) (Owner, error) {
	pid, start, boot, err := selfProc()
	if err != nil {
		return Owner{}, fmt.Errorf("lock owner: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return Owner{}, fmt.Errorf("lock owner: %w", err)
	}
	return Owner{PID: pid, Start: start, BootID: boot, Host: host, Created: now.UTC()}, nil
}

// Acquire takes the lock at path for the current process. If another owner
// holds it, the error is a *HeldError naming that owner.
func Acquire(path string) (*Lock, error) {
	o, raw, err := selfRaw()
	if err != nil {
		return nil, err
	}
	tmp, err := writeTemp(path, raw)
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	l := &Lock{path: path, raw: raw, owner: o, tmp: tmp}
	err = l.link()
	os.Remove(tmp)
	l.tmp = ""
	if err != nil {
		return nil, err
	}
	return l, nil
}

func jsonLine(o Owner) ([]byte, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// writeTemp writes raw to a new file next to path (not fsynced: a lock
// needs no durability, see the package documentation).
func writeTemp(path string, raw []byte) (string, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d.%s.tmp", path, os.Getpid(), hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(raw)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// removeTorn removes the lock file at path when it is unreadable (empty,
// torn, not an owner) and was last modified before the current boot: what
// a power loss or kernel crash leaves of an unsynced lock, whose owner
// cannot be alive. The judged file is moved aside and compared first, so a
// lock taken meanwhile is put back. It reports whether it removed it.
func removeTorn(path string) bool {
	raw, err := readBounded(path)
	if err != nil {
		return false
	}
	if _, err := parse(path, raw); err == nil {
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || !BeforeBoot(fi.ModTime()) {
		return false
	}
	aside := path + ".torn." + strconv.Itoa(os.Getpid())
	if err := os.Rename(path, aside); err != nil {
		return false
	}
	moved, err := os.ReadFile(aside)
	if err != nil || !bytes.Equal(moved, raw) {
		if lerr := os.Link(aside, path); lerr == nil {
			os.Remove(aside)
		}
		return false
	}
	return os.Remove(aside) == nil
}

// BeforeBoot reports whether t is before the current boot (/proc/stat
// btime): a file last modified then was written by a process that no
// longer runs. When the boot time cannot be read it reports false.
func BeforeBoot(t time.Time) bool {
	b, err := bootTime()
	return err == nil && t.Before(b)
}

func bootTime() (time.Time, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, ln := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(ln, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat: btime: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, errors.New("/proc/stat: no btime")
}

// Moved records that the directory holding the lock was renamed, so that
// the lock file is now at path. It fails unless the file there is this lock.
func (l *Lock) Moved(path string) error {
	cur, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("lock moved to %s: %w", path, err)
	}
	if !bytes.Equal(cur, l.raw) {
		return fmt.Errorf("lock moved to %s: the file there is another lock", path)
	}
	l.path = path
	return nil
}

// Release removes the lock if it is still this one.
func (l *Lock) Release() error {
	if l.kf != nil {
		return l.releaseKept()
	}
	cur, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Errorf("release %s: %w", l.path, err)
	}
	if !bytes.Equal(cur, l.raw) {
		return fmt.Errorf("release %s: the lock was replaced by another owner", l.path)
	}
	if err := os.Remove(l.path); err != nil {
		return fmt.Errorf("release %s: %w", l.path, err)
	}
	return nil
}

// Read returns the owner recorded in the lock file at path.
func Read(path string) (Owner, error) {
	raw, err := readBounded(path)
	if err != nil {
		return Owner{}, err
	}
	return parse(path, raw)
}

func readBounded(path string) ([]byte, error) {
	f, err := bounded.Open(path) // a FIFO planted as the lock cannot hang a reader
	if err != nil {
		return nil, fmt.Errorf("read lock: %w", err)
	}
	defer f.Close()
	raw, err := bounded.ReadAll(f, maxLockFile)
	if err != nil {
		return nil, fmt.Errorf("read lock %s: %w", path, err)
	}
	return raw, nil
}

func parse(path string, raw []byte) (Owner, error) {
	var o Owner
	if err := strictjson.Decode(raw, &o); err != nil {
		return Owner{}, fmt.Errorf("read lock %s: %w", path, err)
	}
	switch {
	case o.PID <= 0:
		return Owner{}, fmt.Errorf("read lock %s: pid: %d is not a process id", path, o.PID)
	case o.Start == 0:
		return Owner{}, fmt.Errorf("read lock %s: start: missing", path)
	case o.Host == "":
		return Owner{}, fmt.Errorf("read lock %s: host: missing", path)
	case o.BootID == "":
		return Owner{}, fmt.Errorf("read lock %s: boot_id: missing", path)
	case o.Created.IsZero():
		return Owner{}, fmt.Errorf("read lock %s: created: missing", path)
	}
	return o, nil
}

// Alive reports whether o may still be running. An owner on another host
// is assumed alive: nothing here can prove otherwise.
func Alive(o Owner) bool {
	if host, err := os.Hostname(); err != nil || host != o.Host {
		return true
	}
	if boot, err := bootID(); err != nil {
		return true
	} else if boot != o.BootID {
		return false // the machine rebooted since
	}
	start, state, err := procStat(o.PID)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	if state == 'Z' || state == 'X' { // exited, waiting to be reaped
		return false
	}
	return start == o.Start
}

// Running reports whether pid names a process that has not exited: one
// that is gone, or a zombie waiting to be reaped, is not running.
func Running(pid int) bool {
	_, state, err := procStat(pid)
	return err == nil && state != 'Z' && state != 'X'
}

// Break removes the lock at path only when its owner is on this host,
// provably dead, and the lock is older than olderThan at now. It returns
// the owner it removed; otherwise a *BreakRefused.
func Break(path string, olderThan time.Duration, now time.Time) (Owner, error) {
	raw, err := readBounded(path)
	if err == nil {
		var o Owner
		if o, err = parse(path, raw); err == nil {
			return breakOwned(path, raw, o, olderThan, now)
		}
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Owner{}, err
	case removeTorn(path):
		// torn by a crash before this boot: stale, and now gone
		return Owner{}, fmt.Errorf("break %s: a lock torn before this boot was removed: %w", path, os.ErrNotExist)
	}
	return Owner{}, &BreakRefused{Reason: RefusedUnreadable, Detail: err.Error()}
}

// breakOwned is Break for the readable lock raw of owner o.
func breakOwned(path string, raw []byte, o Owner, olderThan time.Duration, now time.Time) (Owner, error) {
	if host, err := os.Hostname(); err != nil || host != o.Host {
		return o, &BreakRefused{Reason: RefusedForeignHost, Owner: o, Detail: fmt.Sprintf("owner pid %d is on host %q", o.PID, o.Host)}
	}
	if Alive(o) {
		return o, &BreakRefused{Reason: RefusedAlive, Owner: o, Detail: fmt.Sprintf("pid %d (start %d) is running", o.PID, o.Start)}
	}
	if age := now.Sub(o.Created); age < olderThan {
		return o, &BreakRefused{Reason: RefusedTooYoung, Owner: o, Detail: fmt.Sprintf("age %s is less than %s", age.Round(time.Millisecond), olderThan)}
	}
	// Move the judged file aside, then make sure it is the one judged: a
	// new owner may have taken the lock in between.
	aside := path + ".broken." + strconv.Itoa(os.Getpid())
	if err := os.Rename(path, aside); err != nil {
		return o, fmt.Errorf("break %s: %w", path, err)
	}
	moved, err := os.ReadFile(aside)
	if err != nil || !bytes.Equal(moved, raw) {
		if lerr := os.Link(aside, path); lerr == nil {
			os.Remove(aside)
		}
		return o, fmt.Errorf("break %s: the lock changed while it was being broken", path)
	}
	if err := os.Remove(aside); err != nil {
		return o, fmt.Errorf("break %s: %w", path, err)
	}
	sweepKept(path) // the dead owner's kept owner file (AcquireKept), if any
	return o, nil
}

func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func startTime(pid int) (uint64, error) {
	start, _, err := procStat(pid)
	return start, err
}

// procStat reads the start time (field 22) and state (field 3) of pid.
func procStat(pid int) (start uint64, state byte, err error) {
	st, err := readStat(pid)
	return st.start, st.state, err
}

// StartTime is the start time of process pid in clock ticks since boot
// (/proc/<pid>/stat field 22), as Owner.Start and Group.Start record it.
func StartTime(pid int) (uint64, error) { return startTime(pid) }

// stat is what readStat reads from /proc/<pid>/stat.
type stat struct {
	state byte
	pgrp  int
	start uint64
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields that follow start after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	pgrp, err := strconv.Atoi(f[2]) // field 5
	if err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: pgrp: %w", pid, err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22
	if err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return stat{state: f[0][0], pgrp: pgrp, start: start}, nil
}
