// Package lock is the per-run writer lock (events.lock).
//
// The lock file holds its owner as JSON: pid, the process start time in
// clock ticks since boot (/proc/<pid>/stat field 22), the boot id, the host
// and the creation time. It is written to a temporary file, fsynced, and
// hard-linked into place, so it is never seen half-written and only one of
// several racing processes wins. A lock is broken only when its owner is
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
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/kernel/bounded"
	"github.com/proofgate/proofgate/kernel/strictjson"
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
func Self(now time.Time) (Owner, error) {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return Owner{}, fmt.Errorf("lock owner: %w", err)
	}
	boot, err := bootID()
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
	o, err := Self(time.Now())
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	raw = append(raw, '\n')
	tmp, err := writeTemp(path, raw)
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	defer os.Remove(tmp)
	for attempt := 0; ; attempt++ {
		err := os.Link(tmp, path)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("acquire %s: %w", path, err)
		}
		held, rerr := Read(path)
		switch {
		case rerr == nil:
			return nil, &HeldError{Owner: held, Path: path}
		case errors.Is(rerr, os.ErrNotExist) && attempt < 3:
			continue // released meanwhile: try again
		}
		return nil, &HeldError{Path: path, Err: rerr}
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("acquire %s: %w", path, err)
	}
	return &Lock{path: path, raw: raw, owner: o}, nil
}

// writeTemp writes raw to a new fsynced file next to path.
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
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
	if err := syncDir(filepath.Dir(l.path)); err != nil {
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
	f, err := os.Open(path)
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
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Owner{}, err
		}
		return Owner{}, &BreakRefused{Reason: RefusedUnreadable, Detail: err.Error()}
	}
	o, err := parse(path, raw)
	if err != nil {
		return Owner{}, &BreakRefused{Reason: RefusedUnreadable, Detail: err.Error()}
	}
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
	if err := syncDir(filepath.Dir(path)); err != nil {
		return o, fmt.Errorf("break %s: %w", path, err)
	}
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
