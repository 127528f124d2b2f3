package retention

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// placeholderFile is the one file left in an archived run's directory.
const placeholderFile = "archived.json"

// maxPlaceholder bounds a placeholder.
const maxPlaceholder = 64 << 10

// Placeholder is <state>/runs/<RUN>/archived.json: what stands in for an
// archived run. It is a pointer for readers, not evidence: every reader
// checks it against the prune log's record.
type Placeholder struct {
	V        int    `json:"v"` // 1
	Run      string `json:"run"`
	Archive  string `json:"archive"`
	Digest   string `json:"digest"`
	Size     int64  `json:"size"`
	State    string `json:"state"`
	Head     string `json:"head"`
	Length   int    `json:"length"`
	Archived string `json:"archived"` // RFC 3339 UTC
}

// PlaceholderPath is the placeholder file of the run directory dir.
func PlaceholderPath(runDir string) string { return filepath.Join(runDir, placeholderFile) }

// IsArchived reports whether the run directory dir holds a placeholder:
// the run is archived (or an archiving was cut short; Recover finishes it
// or undoes it).
func IsArchived(runDir string) bool {
	_, err := os.Lstat(PlaceholderPath(runDir))
	return err == nil
}

// ReadPlaceholder reads dir's placeholder.
func ReadPlaceholder(runDir string) (*Placeholder, error) {
	id := filepath.Base(runDir)
	f, err := os.Open(PlaceholderPath(runDir))
	if err != nil {
		return nil, &Error{Reason: ReasonPlaceholder, Run: id, Detail: err.Error(), Err: err}
	}
	defer f.Close()
	b, err := bounded.ReadAll(f, maxPlaceholder)
	if err != nil {
		return nil, &Error{Reason: ReasonPlaceholder, Run: id, Detail: err.Error(), Err: err}
	}
	var p Placeholder
	if err := strictjson.Decode(b, &p); err != nil || p.V != 1 || p.Run != id {
		return nil, &Error{Reason: ReasonPlaceholder, Run: id, Detail: fmt.Sprintf("%s is not a placeholder of this run (%v)", placeholderFile, err)}
	}
	return &p, nil
}

func writePlaceholder(runDir string, p Placeholder) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return durable.WriteFile(PlaceholderPath(runDir), append(b, '\n'), 0o444)
}

// Archived is an archived run opened for reading.
type Archived struct {
	Record ArchivedData
	// Dir is a temporary directory named after the run holding the
	// archive's files; Close removes it.
	Dir  string
	root string
}

// Close removes the extracted files.
func (a *Archived) Close() error { return os.RemoveAll(a.root) }

// OpenArchived opens archived run id for reading: it checks the
// placeholder against the prune log's last record of the run, hashes the
// archive against the recorded digest and extracts it into a temporary
// directory. Refusals are *Error with an archive reason.
func OpenArchived(stateDir, id string) (*Archived, error) {
	rec, err := verifiedRecord(stateDir, id)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "proofgate-archived-")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, id)
	f, err := os.Open(filepath.Join(stateDir, filepath.FromSlash(rec.Archive)))
	if err == nil {
		err = extractArchive(f, dir)
		f.Close()
	}
	if err != nil {
		os.RemoveAll(root)
		return nil, &Error{Reason: ReasonArchiveMalformed, Run: id, Detail: err.Error(), Err: err}
	}
	return &Archived{Record: rec, Dir: dir, root: root}, nil
}

// verifiedRecord returns the prune log's record of archived run id after
// checking the placeholder and the archive's digest.
func verifiedRecord(stateDir, id string) (ArchivedData, error) {
	h, err := ReadHistory(stateDir)
	if err != nil {
		return ArchivedData{}, err
	}
	ph, err := ReadPlaceholder(filepath.Join(stateDir, "runs", id))
	if err != nil {
		return ArchivedData{}, err
	}
	rec, ok := h.Archived[id]
	switch {
	case !ok:
		return rec, &Error{Reason: ReasonArchiveUnrecorded, Run: id, Detail: fmt.Sprintf("the placeholder names %s, which the prune log never recorded", ph.Archive)}
	case ph.Digest != rec.Digest || ph.Archive != rec.Archive:
		return rec, &Error{Reason: ReasonPlaceholder, Run: id, Detail: fmt.Sprintf("the placeholder names %s %s, the prune log recorded %s %s", ph.Archive, ph.Digest, rec.Archive, rec.Digest)}
	}
	return rec, checkArchiveFile(stateDir, rec)
}

// checkArchiveFile hashes rec's archive against its recorded digest.
func checkArchiveFile(stateDir string, rec ArchivedData) error {
	d, _, err := fileDigest(filepath.Join(stateDir, filepath.FromSlash(rec.Archive)))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &Error{Reason: ReasonArchiveMissing, Run: rec.Run, Detail: fmt.Sprintf("the prune log recorded %s (%s) and it is gone", rec.Archive, rec.Digest)}
	case err != nil:
		return &Error{Reason: ReasonArchiveMissing, Run: rec.Run, Detail: err.Error(), Err: err}
	case d != rec.Digest:
		return &Error{Reason: ReasonArchiveTampered, Run: rec.Run, Detail: fmt.Sprintf("%s hashes to %s, the prune log recorded %s", rec.Archive, d, rec.Digest)}
	}
	return nil
}

// Problem is an integrity error of the state directory's archives.
type Problem struct {
	Run    string `json:"run"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail"`
}

// Problems lists what the prune log recorded that is no longer there: a
// recorded run whose directory and placeholder are gone, or whose archive
// is gone. It does not hash archives (readers do, when they read one).
func Problems(stateDir string) ([]Problem, error) {
	h, err := ReadHistory(stateDir)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, id := range sortedKeys(h.Archived) {
		rec := h.Archived[id]
		dir := filepath.Join(stateDir, "runs", id)
		if _, err := os.Lstat(dir); err != nil {
			out = append(out, Problem{Run: id, Reason: ReasonArchiveMissing, Detail: fmt.Sprintf("the prune log recorded run %s as archived in %s and its directory is gone", id, rec.Archive)})
			continue
		}
		if !IsArchived(dir) {
			continue // archived and then restored by Recover, or re-archived later
		}
		if _, err := os.Lstat(filepath.Join(stateDir, filepath.FromSlash(rec.Archive))); err != nil {
			out = append(out, Problem{Run: id, Reason: ReasonArchiveMissing, Detail: fmt.Sprintf("the prune log recorded %s (%s) and it is gone", rec.Archive, rec.Digest)})
		}
	}
	return out, nil
}
