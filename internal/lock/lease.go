package lock

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// A lease is a shared hold on what a lock guards, by a process that works
// on it for long without holding the lock (evidence collect runs its
// command for minutes, writing into the run's directory, before it chains
// the result under the run's lock; holding the lock meanwhile would hold
// off approvals). It is a file beside the lock,
// <lock>.lease.<pid>.<16 hex>, holding
//
//	{"owner":{…as in the lock file…},"purpose":"evidence collect"}
//
// written to a temporary file and renamed into place (never seen
// half-written), removed by Release. Leases exclude neither one another
// nor a lock holder: they tell a reclaimer (`proofgate prune`) to leave
// the thing alone while their owner is Alive. A lease whose owner is
// provably dead (a killed writer) holds nothing; the reclaimer removes it
// with what it reclaims, and the next TakeLease beside the same lock
// removes it. An unreadable lease counts as live: nothing is reclaimed on
// a guess.

// leaseMid is what a lease's name has after the lock's path.
const leaseMid = ".lease."

// maxPurpose bounds a lease's purpose.
const maxPurpose = 64

// LeaseInfo is what a lease file holds.
type LeaseInfo struct {
	Owner   Owner  `json:"owner"`
	Purpose string `json:"purpose"`
}

// Lease is a held lease.
type Lease struct {
	path string
	info LeaseInfo
}

// Path is the lease file.
func (l *Lease) Path() string { return l.path }

// TakeLease takes a lease beside the lock at lockPath for the current
// process; purpose says what it does (for the reclaimer's report).
func TakeLease(lockPath, purpose string) (*Lease, error) {
	if purpose == "" || len(purpose) > maxPurpose {
		return nil, fmt.Errorf("lease %s: purpose must be 1 to %d bytes", lockPath, maxPurpose)
	}
	o, err := Self(time.Now())
	if err != nil {
		return nil, err
	}
	sweepLeases(lockPath)
	info := LeaseInfo{Owner: o, Purpose: purpose}
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	path := fmt.Sprintf("%s%s%d.%s", lockPath, leaseMid, o.PID, hex.EncodeToString(rnd[:]))
	tmp, err := writeTemp(path, append(raw, '\n'))
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", lockPath, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("lease %s: %w", lockPath, err)
	}
	return &Lease{path: path, info: info}, nil
}

// Release removes the lease. A lease already gone (a reclaimer judged
// its owner dead, wrongly) is an error.
func (l *Lease) Release() error {
	if err := os.Remove(l.path); err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// HeldLease is a lease that holds: its owner alive, or its file
// unreadable (Err set).
type HeldLease struct {
	Path string
	Info LeaseInfo
	Err  error
}

// Describe says who holds it, for a report.
func (h HeldLease) Describe() string {
	if h.Err != nil {
		return fmt.Sprintf("an unreadable lease %s (%v)", filepath.Base(h.Path), h.Err)
	}
	return fmt.Sprintf("%s, pid %d on host %s since %s", h.Info.Purpose, h.Info.Owner.PID, h.Info.Owner.Host,
		h.Info.Owner.Created.Format(time.RFC3339))
}

// LiveLeases returns the leases on the lock at lockPath that hold, in name
// order; leases of dead owners are left out.
func LiveLeases(lockPath string) ([]HeldLease, error) {
	names, err := filepath.Glob(globEscape(lockPath) + leaseMid + "*")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []HeldLease
	for _, n := range names {
		if filepath.Ext(n) == ".tmp" {
			continue // being written: renamed into place before its writer starts
		}
		info, err := readLease(n)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // released meanwhile
		case err != nil:
			out = append(out, HeldLease{Path: n, Err: err})
		case Alive(info.Owner):
			out = append(out, HeldLease{Path: n, Info: info})
		}
	}
	return out, nil
}

// sweepLeases removes the leases beside lockPath whose owner is provably
// dead (a killed writer's): they hold nothing. Unreadable ones stay.
func sweepLeases(lockPath string) {
	names, _ := filepath.Glob(globEscape(lockPath) + leaseMid + "*")
	for _, n := range names {
		if filepath.Ext(n) == ".tmp" {
			continue
		}
		if info, err := readLease(n); err == nil && !Alive(info.Owner) {
			os.Remove(n)
		}
	}
}

// readLease reads the lease at path without blocking: a FIFO or device
// planted as a lease is refused (bounded.ReadFile), and so holds.
func readLease(path string) (LeaseInfo, error) {
	raw, err := bounded.ReadFile(path, maxLockFile)
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("read lease %s: %w", path, err)
	}
	var info LeaseInfo
	if err := strictjson.Decode(raw, &info); err != nil {
		return LeaseInfo{}, fmt.Errorf("read lease %s: %w", path, err)
	}
	if info.Owner.PID <= 0 || info.Purpose == "" {
		return LeaseInfo{}, fmt.Errorf("read lease %s: no owner pid or purpose", path)
	}
	return info, nil
}

// globEscape escapes the glob metacharacters of a path.
func globEscape(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, p[i])
	}
	return string(out)
}
