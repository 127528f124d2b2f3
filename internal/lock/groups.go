package lock

// Process records: what a lock owner leaves running if it dies.
//
// A harness that starts a check as host processes (the process runtime)
// records it, before the check can outlive the harness, in a small JSON file
// of the run's procs directory (<run>/procs/<name>.json):
//
//	{"check":"unit","owner":{…the harness, as in events.lock…},
//	 "pgid":4242,"start":98765,"cgroup":"/sys/fs/cgroup/…/proofgate-17-1a2b3c4d",
//	 "containment":"cgroup","reaped":{"by":"unlock","at":"…","result":"killed"}}
//
// pgid is the check's process group (its main process is the leader) and
// start that leader's start time in clock ticks since boot (/proc/<pid>/stat
// field 22); pgid 0 means the record was written before the process
// existed. cgroup, when present, is the cgroup v2 directory that contains
// every descendant of the check, setsid'd ones included. The harness
// removes the record once everything in it is dead. A record that remains
// belongs to a harness that died: Reap, called by 'events unlock' and 'gc',
// kills what it names only when its owner is provably dead (Alive), and
// never signals a group whose leader pid now runs another process (another
// start time): a reused pid is never hit.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/proofgate/proofgate/internal/bounded"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/proofgate/proofgate/internal/strictjson"
	"time"

	"github.com/proofgate/proofgate/internal/durable"
)

// Containments a process record names.
const (
	// ContainCgroup: the check runs in a cgroup v2 the harness created;
	// killing it kills every descendant.
	ContainCgroup = "cgroup"
	// ContainGroup: the check runs in its own process group; a descendant
	// that leaves the group (setsid, setpgid) escapes the kill.
	ContainGroup = "process-group"
)

// Results of killing a recorded group.
const (
	ResultKilled    = "killed"     // processes were running and were sent SIGKILL
	ResultGone      = "gone"       // nothing of the check was running any more
	ResultPidReused = "pid-reused" // the leader's pid runs another process: not signalled
	ResultRebooted  = "rebooted"   // recorded before the last boot: nothing can survive
	ResultOwnerLive = "owner-alive"
	ResultNoSupport = "unsupported" // this OS cannot check start times: not signalled
)

// maxGroupFile bounds a process record; maxGroups bounds a procs directory.
const (
	maxGroupFile = 4096
	maxGroups    = 4096
)

// Group is one process record.
type Group struct {
	Check       string  `json:"check"`
	Owner       Owner   `json:"owner"`
	PGID        int     `json:"pgid,omitempty"`
	Start       uint64  `json:"start,omitempty"`
	Cgroup      string  `json:"cgroup,omitempty"`
	Containment string  `json:"containment"`
	Reaped      *Reaped `json:"reaped,omitempty"`
}

// Reaped says who killed a recorded group after its owner died, and what
// was found.
type Reaped struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Result string    `json:"result"`
}

// Killed is the report of one record that Reap handled.
type Killed struct {
	Check  string
	PGID   int
	Cgroup string
	Result string
	// By and At say who first killed it, when an earlier reaper did.
	By string
	At time.Time
}

// NewGroupPath returns a fresh record path in dir.
func NewGroupPath(dir string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return filepath.Join(dir, "proc-"+hex.EncodeToString(b[:])+".json")
}

// WriteGroup writes the record g at path, creating its directory. It is
// not fsynced (ADR 0019): a record names live processes, which a power
// loss or kernel crash kills; Reap drops a record from before the current
// boot that such a crash left unreadable.
func WriteGroup(path string, g Group) error {
	raw, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("process record %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("process record: %w", err)
	}
	if err := durable.ReplaceVolatile(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("process record %s: %w", path, err)
	}
	return nil
}

// RemoveGroup removes the record at path once what it names is dead.
func RemoveGroup(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("process record: %w", err)
	}
	return nil
}

// ErrRecordGone reports a record removed while it was read: what was
// read may be another record's bytes (a slot rewritten after its
// Unpublish) and is not judged.
var ErrRecordGone = errors.New("process record removed while it was read")

// ReadGroup reads the record at path; a record that no longer is the file
// it read once read is ErrRecordGone.
func ReadGroup(path string) (Group, error) {
	f, err := bounded.Open(path) // a FIFO planted as a record cannot hang gc
	if err != nil {
		return Group{}, fmt.Errorf("process record: %w", err)
	}
	defer f.Close()
	if openedHook != nil {
		openedHook(path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxGroupFile+1))
	if err != nil {
		return Group{}, fmt.Errorf("process record %s: %w", path, err)
	}
	if err := sameFile(path, f); err != nil {
		return Group{}, err
	}
	if len(raw) > maxGroupFile {
		return Group{}, fmt.Errorf("process record %s: larger than %d bytes", path, maxGroupFile)
	}
	var g Group
	if err := strictjson.Decode(raw, &g); err != nil {
		return Group{}, fmt.Errorf("process record %s: %w", path, err)
	}
	switch {
	case g.Owner.PID <= 0 || g.Owner.Start == 0 || g.Owner.BootID == "" || g.Owner.Host == "":
		return Group{}, fmt.Errorf("process record %s: owner: incomplete", path)
	case g.PGID < 0 || g.PGID == 1:
		return Group{}, fmt.Errorf("process record %s: pgid: %d is not a process group of a check", path, g.PGID)
	case g.PGID > 0 && g.Start == 0:
		return Group{}, fmt.Errorf("process record %s: start: missing", path)
	case g.Cgroup != "" && !validCgroupPath(g.Cgroup):
		return Group{}, fmt.Errorf("process record %s: cgroup: %q is not a ProofGate cgroup", path, g.Cgroup)
	}
	return g, nil
}

// openedHook, when set (by tests), runs between ReadGroup's open and read.
var openedHook func(path string)

// sameFile checks that path still names f.
func sameFile(path string, f *os.File) error {
	mine, err := f.Stat()
	if err != nil {
		return fmt.Errorf("process record %s: %w", path, err)
	}
	cur, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && !os.SameFile(cur, mine) {
		return fmt.Errorf("process record %s: %w", path, ErrRecordGone)
	}
	if err != nil {
		return fmt.Errorf("process record %s: %w", path, err)
	}
	return nil
}

// CgroupPrefix starts the name of every cgroup the process runtime creates.
const CgroupPrefix = "proofgate-"

func validCgroupPath(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && strings.HasPrefix(filepath.Base(p), CgroupPrefix)
}

// GroupPaths lists the records in dir, sorted; a missing dir has none.
func GroupPaths(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("process records: %w", err)
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, "proc-") && strings.HasSuffix(n, ".json") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	if len(out) > maxGroups {
		return nil, fmt.Errorf("process records %s: more than %d", dir, maxGroups)
	}
	sort.Strings(out)
	return out, nil
}

// Reap kills what every record in dir names whose owner is provably dead,
// marks each record with who reaped it (by) and the result, and, with
// remove, deletes the records it handled. Records of a live owner (or one
// on another host) are reported as owner-alive and left alone. An
// unreadable record is an error: what it names cannot be judged; unless it
// was last modified before the current boot (a record torn by a crash),
// whose processes cannot be alive: it is removed.
func Reap(dir, by string, now time.Time, remove bool) ([]Killed, error) {
	paths, err := GroupPaths(dir)
	if err != nil {
		return nil, err
	}
	var out []Killed
	defer sweepSlots(dir) // after the records: a slot that was one is free then
	for _, p := range paths {
		g, err := ReadGroup(p)
		if errors.Is(err, ErrRecordGone) || errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile: its owner was done with it
		}
		if err != nil {
			if fi, serr := os.Lstat(p); serr == nil && fi.Mode().IsRegular() && BeforeBoot(fi.ModTime()) {
				if err := RemoveGroup(p); err != nil {
					return out, err
				}
				continue
			}
			return out, err
		}
		k := Killed{Check: g.Check, PGID: g.PGID, Cgroup: g.Cgroup}
		if Alive(g.Owner) {
			k.Result = ResultOwnerLive
			out = append(out, k)
			continue
		}
		res, err := KillGroup(g)
		if err != nil {
			return out, fmt.Errorf("process record %s: %w", p, err)
		}
		k.Result = res
		if g.Reaped == nil || g.Reaped.Result != ResultKilled {
			g.Reaped = &Reaped{By: by, At: now.UTC(), Result: res}
		}
		k.By, k.At = g.Reaped.By, g.Reaped.At
		if g.Reaped.Result == ResultKilled {
			k.Result = ResultKilled // an earlier reaper killed it; now it is gone
		}
		if remove {
			err = RemoveGroup(p)
		} else {
			err = WriteGroup(p, g)
		}
		if err != nil {
			return out, err
		}
		out = append(out, k)
	}
	return out, nil
}

// KillGroup kills everything the record g names, without judging its
// owner: the cgroup (when recorded) and the process group, the latter only
// when its leader is still the recorded process (same start time) or is
// gone while members remain (a live group keeps its pgid from reuse).
func KillGroup(g Group) (string, error) {
	if g.Owner.BootID != "" {
		if boot, err := bootID(); err == nil && boot != g.Owner.BootID {
			return ResultRebooted, nil
		}
	}
	return killGroup(g)
}

// GroupRuns reports whether anything the record g names still runs: a
// process in its cgroup, or a member of its process group while its
// leader is the recorded process or gone (a live group keeps its pgid
// from reuse). A record from before the current boot names nothing that
// runs. When it cannot tell, it says true with the error: a caller that
// refuses while a group runs refuses then too.
func GroupRuns(g Group) (bool, error) {
	if g.Owner.BootID != "" {
		if boot, err := bootID(); err == nil && boot != g.Owner.BootID {
			return false, nil
		}
	}
	return groupRuns(g)
}
