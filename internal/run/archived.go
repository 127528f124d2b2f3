package run

import (
	"context"
	"fmt"
	"path"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// The hook that lets readers read archived runs (internal/retention,
// `proofgate prune`). An archived run's directory holds only its
// placeholder; Open refuses it (ArchivedError), and Inspect, Audit,
// ReadLog, VerifyLog and ReadDir read the archive instead, after
// retention checks it against the prune log: read-only, transparently.

// ArchivedError refuses a write to an archived run.
type ArchivedError struct{ ID string }

func (e *ArchivedError) Error() string {
	return fmt.Sprintf("run %s: %s: it is archived (%s) and read-only; status, events verify, output and bundle export read it from its archive", e.ID, retention.ReasonArchived, retention.ArchiveDir+"/"+e.ID+retention.ArchiveSuffix)
}

// Is makes the refusal exit 1.
func (e *ArchivedError) Is(target error) bool { return target == exit.Refused }

// Reason is retention.ReasonArchived.
func (e *ArchivedError) Reason() retention.Reason { return retention.ReasonArchived }

// ArchiveInfo says where an archived run's history was read from.
type ArchiveInfo struct {
	Archive string `json:"archive"`
	Digest  string `json:"digest"`
}

// Recover restores what a killed `proofgate prune` left in stateDir
// (retention.Recover); every store open (Plan, Open, Inspect) calls it.
func Recover(stateDir string) error { return retention.Recover(stateDir) }

// recoverPrune is Recover for the store opens: a failure to recover (the
// prune log does not verify, say) must not stop the run's own readers and
// writers. What it leaves is safe to read (only unreachable blobs are ever
// renamed), and readers of archived runs report what is wrong.
func recoverPrune(stateDir string) { _ = retention.Recover(stateDir) }

// pruneExclude is what `proofgate prune` writes beside runs/ (the archive
// directory, the prune log with its segments and head index, the prune lock): harness
// state, never part of the work tree a run binds, like runs/ itself.
func pruneExclude(root, stateDir string) []string {
	ex := stateExclude(root, stateDir)
	if len(ex) == 0 {
		return nil
	}
	base := path.Dir(ex[0])
	// the prune log's segments, head index and its temporary files
	// (.prune-log.head.json.tmp-*), the prune lock and its kept owner files
	return []string{path.Join(base, retention.ArchiveDir), path.Join(base, "prune-log.*"), path.Join(base, ".prune-log.*"),
		path.Join(base, retention.PruneLock+"*")}
}

// ReadDir returns a directory holding run id's files, for reading: the run
// directory itself, or for an archived run a temporary extraction of its
// verified archive (info says which). done removes the extraction. id must
// be resolved.
func ReadDir(stateDir, id string) (dir string, info *ArchiveInfo, done func(), err error) {
	return readable(NewStore(stateDir).Path(id))
}

// readable maps the run directory dir to a directory to read it from.
func readable(dir string) (string, *ArchiveInfo, func(), error) {
	if !retention.IsArchived(dir) {
		return dir, nil, func() {}, nil
	}
	state := filepath.Dir(filepath.Dir(dir))
	a, err := retention.OpenArchived(state, filepath.Base(dir))
	if err != nil {
		return "", nil, nil, err
	}
	return a.Dir, &ArchiveInfo{Archive: a.Record.Archive, Digest: a.Record.Digest}, func() { a.Close() }, nil
}

// inspectArchived is Inspect for an archived run: the reconciled report of
// its archive, and nothing live (no writer, no staleness: it is final).
func inspectArchived(_ context.Context, dir string) (*Status, error) {
	rd, info, done, err := readable(dir)
	if err != nil {
		return nil, err
	}
	defer done()
	rep, err := replay.Audit(rd)
	if err != nil {
		return nil, err
	}
	return &Status{Report: rep, Archived: info}, nil
}
