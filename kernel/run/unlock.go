package run

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/kernel/lock"
)

// ErrNoLock is returned by Unlock for a run without a writer lock.
var ErrNoLock = errors.New("no writer lock: nothing to unlock")

// Unlock removes the writer lock of run id only when lock.Break allows it
// (the owner is provably dead on this host and the lock is older than
// olderThan), then records lock.broken with actor under the new lock. It
// returns the resolved run id and the dead owner. A refusal is a
// *lock.BreakRefused.
func Unlock(stateDir, id, actor string, olderThan time.Duration, now time.Time) (string, lock.Owner, error) {
	if actor == "" {
		return id, lock.Owner{}, &RefusedError{Why: "unlock needs an actor"}
	}
	store := NewStore(stateDir)
	id, err := store.Resolve(id)
	if err != nil {
		return id, lock.Owner{}, err
	}
	owner, err := lock.Break(filepath.Join(store.Path(id), LockFile), olderThan, now)
	if errors.Is(err, fs.ErrNotExist) {
		return id, lock.Owner{}, fmt.Errorf("run %s: %w", id, ErrNoLock)
	}
	if err != nil {
		return id, lock.Owner{}, err
	}
	r, err := Open(stateDir, id)
	if err != nil {
		return id, owner, err
	}
	defer r.Close()
	_, err = r.Append(TypeLockBroken, LockBrokenData{Actor: actor, OwnerPID: owner.PID, Host: owner.Host,
		Created: owner.Created.UTC().Format(time.RFC3339Nano)})
	return id, owner, err
}
