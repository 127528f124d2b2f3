package retention

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/lock"
)

// PruneLock is the state-wide prune lock: <state>/prune.lock. An apply
// holds it throughout; a killed apply leaves it, which is how the next
// store open knows to restore its leftovers.
const PruneLock = "prune.lock"

// Recover restores what a killed prune left in stateDir, if anything: it
// is one stat when no prune lock exists, and does nothing while a live
// prune holds it. It removes half-written and unrecorded archives (whose
// run is still in place), finishes or undoes cut-short placeholders,
// renames every <blob>.pruning back, and breaks the run locks the dead
// prune held. Idempotent; safe at every store open.
func Recover(stateDir string) error {
	p := filepath.Join(stateDir, PruneLock)
	o, err := lock.Read(p)
	if errors.Is(err, os.ErrNotExist) {
		// No prune holds it; one killed while taking it leaves only its
		// owner file.
		lock.SweepTemps(p)
		return nil
	}
	if err == nil && lock.Alive(o) {
		return nil // a live prune: its own leftovers are its business
	}
	if _, err := lock.Break(p, 0, time.Now()); err != nil && !errors.Is(err, os.ErrNotExist) {
		var br *lock.BreakRefused
		if errors.As(err, &br) && br.Reason == lock.RefusedAlive {
			return nil
		}
		return fmt.Errorf("recover prune: %w", err)
	}
	lk, err := lock.Acquire(p)
	if err != nil {
		return nil // another process is recovering or pruning
	}
	defer lk.Release()
	return recoverLeftovers(stateDir, o)
}

// recoverLeftovers is Recover under the prune lock; dead is the killed
// prune's lock owner (zero if unreadable).
func recoverLeftovers(stateDir string, dead lock.Owner) error {
	h, err := ReadHistory(stateDir)
	if err != nil {
		return err
	}
	ids, err := listRuns(stateDir)
	if err != nil {
		return err
	}
	removeLockTemps(filepath.Join(stateDir, PruneLock), dead)
	for _, id := range ids {
		dir := filepath.Join(stateDir, RunsDir, id)
		if o, err := lock.Read(filepath.Join(dir, lockFile)); err == nil && o.PID == dead.PID && o.Start == dead.Start && o.BootID == dead.BootID && !lock.Alive(o) {
			os.Remove(filepath.Join(dir, lockFile))
		}
		removeLockTemps(filepath.Join(dir, lockFile), dead)
		if err := recoverRun(stateDir, dir, h); err != nil {
			return err
		}
		restorePruning(dir)
	}
	return recoverArchives(stateDir, h)
}

// removeLockTemps removes the temporary files the dead prune left while
// taking the lock at path (<path>.<pid>.<hex>.tmp, internal/lock).
func removeLockTemps(path string, dead lock.Owner) {
	if dead.PID == 0 {
		return
	}
	m, _ := filepath.Glob(fmt.Sprintf("%s.%d.*.tmp", path, dead.PID))
	for _, p := range m {
		os.Remove(p)
	}
}

// recoverRun finishes or undoes an archiving cut short at dir.
func recoverRun(stateDir, dir string, h *History) error {
	if !IsArchived(dir) {
		return nil
	}
	id := filepath.Base(dir)
	if _, err := verifiedRecord(stateDir, id); err == nil {
		return clearRunDir(dir) // recorded and intact: finish
	}
	if _, err := os.Lstat(filepath.Join(dir, "events.ndjson")); err == nil {
		// The run is still whole: undo the placeholder.
		return os.Remove(PlaceholderPath(dir))
	}
	return nil // nothing to restore from: readers report it
}

// recoverArchives removes half-written archives, and archives the log
// never recorded whose run is still in place; and finishes a recorded
// archiving whose placeholder was never written.
func recoverArchives(stateDir string, h *History) error {
	adir := filepath.Join(stateDir, ArchiveDir)
	ents, err := os.ReadDir(adir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			os.Remove(filepath.Join(adir, name))
			continue
		}
		id, ok := strings.CutSuffix(name, ArchiveSuffix)
		if !ok || !runIDRE.MatchString(id) {
			continue
		}
		dir := filepath.Join(stateDir, RunsDir, id)
		if IsArchived(dir) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, "events.ndjson")); err != nil {
			continue // no run in place to compare with: keep it, readers report it
		}
		rec, recorded := h.Archived[id]
		if !recorded {
			os.Remove(filepath.Join(adir, name)) // written, never recorded
			continue
		}
		if err := finishRecorded(stateDir, dir, rec); err != nil {
			return err
		}
	}
	return nil
}

// finishRecorded writes the placeholder of a run whose archive the log
// recorded when the archive still proves byte-identical to the directory
// (the prune was killed between the record and the placeholder). A run
// that changed since is left in place for the next apply.
func finishRecorded(stateDir, dir string, rec ArchivedData) error {
	if checkArchiveFile(stateDir, rec) != nil {
		return nil
	}
	files, err := listRunFiles(dir)
	if err != nil || proveArchive(filepath.Join(stateDir, filepath.FromSlash(rec.Archive)), rec.Digest, dir, files) != nil {
		return nil
	}
	ph := Placeholder{V: 1, Run: rec.Run, Archive: rec.Archive, Digest: rec.Digest, Size: rec.Size, State: rec.State, Head: rec.Head, Length: rec.Length, Archived: time.Now().UTC().Format(time.RFC3339)}
	if err := writePlaceholder(dir, ph); err != nil {
		return err
	}
	return clearRunDir(dir)
}

// restorePruning renames every blobs/sha256/*.pruning of dir back.
func restorePruning(dir string) {
	bd := filepath.Join(dir, "blobs", "sha256")
	ents, err := os.ReadDir(bd)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), PruningSuffix) {
			restoreBlob(filepath.Join(bd, e.Name()))
		}
	}
}

// countLeftovers counts what a killed prune left (for the dry run).
func countLeftovers(stateDir string) int {
	if _, err := os.Lstat(filepath.Join(stateDir, PruneLock)); err != nil {
		return 0
	}
	return 1
}

// clearRunDir removes everything of an archived run's directory but its
// placeholder and its lock (released by the caller).
func clearRunDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == placeholderFile || e.Name() == lockFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return durable.SyncDir(dir)
}

// renameDurable renames tmp to final and fsyncs the directory.
func renameDurable(tmp, final string) error {
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(final))
}
