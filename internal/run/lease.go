package run

import (
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/retention"
)

// Lease takes a writer's lease on run id (lock.TakeLease beside its
// events.lock) for a writer that works in the run's directory for long
// without its lock: evidence collect, which writes its collection into
// <run>/evidence/ and chains it under the lock only once its command is
// done. `proofgate prune` skips a run with a live lease, and archives
// under the run's lock, so the lease is taken under the lock too (waiting
// up to wait for a live holder), and refused once the run is archived:
// either prune sees the lease, or the writer sees the archive. purpose
// names the writer in prune's report. id must be resolved.
func Lease(stateDir, id, purpose string, wait time.Duration) (*lock.Lease, error) {
	dir := NewStore(stateDir).Path(id)
	recoverPrune(stateDir)
	if retention.IsArchived(dir) {
		return nil, &ArchivedError{ID: id}
	}
	var l *lock.Lease
	_, err := retryHeld(wait, func() (*Run, error) {
		lk, err := lock.Acquire(filepath.Join(dir, LockFile))
		if err != nil {
			return nil, err
		}
		defer lk.Release()
		if retention.IsArchived(dir) { // archived while we took the lock
			return nil, &ArchivedError{ID: id}
		}
		l, err = lock.TakeLease(filepath.Join(dir, LockFile), purpose)
		return nil, err
	})
	return l, err
}
