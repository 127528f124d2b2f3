package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ErrNoLock is returned by Unlock for a run without a writer lock.
var ErrNoLock = errors.New("no writer lock: nothing to unlock")

// Unlocked is what Unlock did.
type Unlocked struct {
	ID    string     // the resolved run id
	Owner lock.Owner // the dead owner whose lock was removed
	// Processes are the checks the dead owner recorded as running, and
	// what became of them (lock.Result*).
	Processes []lock.Killed
}

// Unlock removes the writer lock of run id only when lock.Break allows it
// (the owner is provably dead on this host and the lock is older than
// olderThan), kills every process group and cgroup that the dead owner
// recorded for its checks (lock.Reap: a reused pid is never signalled),
// then records lock.broken with actor and those processes under the new
// lock. A refusal is a *lock.BreakRefused; when a recorded group cannot be
// killed, lock.broken is still recorded and the error returned.
func Unlock(stateDir, id, actor string, olderThan time.Duration, now time.Time) (Unlocked, error) {
	u := Unlocked{ID: id}
	if actor == "" {
		return u, &RefusedError{Why: "unlock needs an actor"}
	}
	if err := checkText(actor, ""); err != nil {
		return u, err
	}
	store := NewStore(stateDir)
	id, err := store.Resolve(id)
	u.ID = id
	if err != nil {
		return u, err
	}
	u.Owner, err = lock.Break(filepath.Join(store.Path(id), LockFile), olderThan, now)
	if errors.Is(err, fs.ErrNotExist) {
		return u, fmt.Errorf("run %s: %w", id, ErrNoLock)
	}
	if err != nil {
		return u, err
	}
	procDir := filepath.Join(store.Path(id), ProcDir)
	u.Processes, err = lock.Reap(procDir, ReapedByUnlock, now, false)
	reapErr := err
	r, err := Open(stateDir, id)
	if err != nil {
		return u, errors.Join(reapErr, err)
	}
	defer r.Close()
	data := replay.LockBrokenData{Actor: actor, OwnerPID: u.Owner.PID, Host: u.Owner.Host,
		Created: u.Owner.Created.UTC().Format(time.RFC3339Nano), Processes: processData(u.Processes)}
	if reapErr != nil {
		data.ProcessError = reapErr.Error()
	}
	if _, err := r.Append(replay.TypeLockBroken, data); err != nil {
		return u, errors.Join(reapErr, err)
	}
	if reapErr == nil {
		// Recorded: the handled records go. A crash before this leaves
		// them for gc, which finds their groups gone.
		if _, err := lock.Reap(procDir, ReapedByUnlock, now, true); err != nil {
			return u, err
		}
		_ = os.Remove(procDir) // only when empty
	}
	return u, reapErr
}

// Who reaps a dead harness's processes (lock.Reaped.By).
const (
	ReapedByUnlock = "unlock"
	ReapedByGC     = "gc"
)

func processData(ks []lock.Killed) []replay.ProcessKilled {
	var out []replay.ProcessKilled
	for _, k := range ks {
		p := replay.ProcessKilled{Check: k.Check, PGID: k.PGID, Cgroup: k.Cgroup, Result: k.Result, By: k.By}
		if !k.At.IsZero() {
			p.At = k.At.UTC().Format(time.RFC3339Nano)
		}
		out = append(out, p)
	}
	return out
}

// GCProcesses kills, in every run of the state directory, the process
// groups and cgroups that a dead harness recorded for its checks
// (lock.Reap), and marks their records. It does not break locks or write
// to the logs: 'events unlock' records lock.broken with what was found.
// It returns what it handled; groups of live harnesses are not touched.
func GCProcesses(stateDir string, now time.Time) ([]RunProcess, error) {
	store := NewStore(stateDir)
	ents, err := os.ReadDir(store.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	var out []RunProcess
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !ValidID(e.Name()) {
			continue
		}
		ks, err := lock.Reap(filepath.Join(store.Path(e.Name()), ProcDir), ReapedByGC, now, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", e.Name(), err))
		}
		for _, k := range ks {
			if k.Result != lock.ResultOwnerLive {
				out = append(out, RunProcess{Run: e.Name(), Killed: k})
			}
		}
	}
	return out, errors.Join(errs...)
}

// RunProcess is one process record that GCProcesses handled.
type RunProcess struct {
	Run string
	lock.Killed
}
