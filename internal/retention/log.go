package retention

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// LogFile is the prune log: <state>/prune-log.ndjson.
const LogFile = "prune-log.ndjson"

// maxLogSize bounds what a reader reads of the prune log.
const maxLogSize = 512 << 20

// Event types of the prune log.
const (
	TypeCheckpoint = "prune.checkpoint"
	TypeArchived   = "prune.archived"
	TypeApplied    = "prune.applied"
)

// LogRun is the run field of every prune log line.
const LogRun = "prune-log"

// logBinding is what every line of the prune log carries: run "prune-log",
// an empty source, and as contract the SHA-256 of "proofgate prune log v1".
var logBinding = func() eventlog.Binding {
	s := sha256.Sum256([]byte("proofgate prune log v1"))
	return eventlog.Binding{Run: LogRun, Contract: "sha256:" + hex.EncodeToString(s[:])}
}()

// ArchivedData is a prune.archived line: one run archived, recorded after
// its archive was written, fsynced and proven byte-identical and before the
// run directory is replaced by its placeholder.
type ArchivedData struct {
	Run     string `json:"run"`
	Archive string `json:"archive"` // archive/<RUN>.tar.gz, relative to the state directory
	Digest  string `json:"digest"`  // sha256 of the .tar.gz bytes
	Size    int64  `json:"size"`
	Files   int    `json:"files"`
	State   string `json:"state"`
	Head    string `json:"head"` // the run's chain head and length
	Length  int    `json:"length"`
	// Blobs are the blob digests the run's log names: they stay
	// reachable for the blob reclaimer although the run is archived.
	Blobs []string `json:"blobs,omitempty"`
}

// CheckpointData is a prune.checkpoint line: the runs an apply with --key
// is about to archive, each with its verified chain head, and the signed
// envelope over that list (payload: the canonical JSON of Runs).
type CheckpointData struct {
	Runs     []ChainHead     `json:"runs"`
	Envelope json.RawMessage `json:"envelope"`
}

// ChainHead is one run's chain head and length.
type ChainHead struct {
	Run    string `json:"run"`
	Head   string `json:"head"`
	Length int    `json:"length"`
}

// AppliedData is a prune.applied line, written when an apply finishes.
type AppliedData struct {
	Who      Who           `json:"who"`
	Settings []Setting     `json:"settings"`
	Archived []ArchivedRef `json:"archived"`
	Counts   Counts        `json:"counts"`
}

// Who ran an apply.
type Who struct {
	Actor string `json:"actor"`
	Host  string `json:"host"`
	PID   int    `json:"pid"`
}

// ArchivedRef names one archived run and its archive digest.
type ArchivedRef struct {
	Run    string `json:"run"`
	Digest string `json:"digest"`
}

// Counts are what an apply did.
type Counts struct {
	Runs           int   `json:"runs"`
	RunsArchived   int   `json:"runs_archived"`
	RunsKept       int   `json:"runs_kept"`
	BlobsReclaimed int   `json:"blobs_reclaimed"`
	BlobsRestored  int   `json:"blobs_restored"`
	BytesReclaimed int64 `json:"bytes_reclaimed"`
}

// History is the verified prune log: the last prune.archived record of
// each run.
type History struct {
	Archived map[string]ArchivedData
	Length   int
	Head     string
}

// ReadHistory reads and verifies the prune log (a missing log is an empty
// history). Damage a killed apply left at its end (a torn line) is
// tolerated, as every event log's is; anything else is a ReasonPruneLog
// refusal.
func ReadHistory(stateDir string) (*History, error) {
	h := &History{Archived: map[string]ArchivedData{}}
	p := filepath.Join(stateDir, LogFile)
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		if segs, _ := filepath.Glob(filepath.Join(stateDir, "prune-log.*.ndjson")); len(segs) == 0 {
			return h, nil
		}
	}
	// The prune log is sealed into segments like any event log
	// (prune-log.NNNNNNNN.ndjson): read the whole chain.
	f, err := eventlog.OpenChain(p)
	if err != nil {
		return nil, &Error{Reason: ReasonPruneLog, Detail: err.Error(), Err: err}
	}
	b, err := bounded.ReadAll(f, maxLogSize)
	f.Close()
	if err != nil {
		return nil, &Error{Reason: ReasonPruneLog, Detail: fmt.Sprintf("%s: %v", LogFile, err), Err: err}
	}
	b, _ = eventlog.Intact(b)
	events, err := eventlog.Read(bytes.NewReader(b), &logBinding)
	if err != nil {
		return nil, &Error{Reason: ReasonPruneLog, Detail: fmt.Sprintf("%s: %v", LogFile, err), Err: err}
	}
	for i, e := range events {
		if e.Type != TypeArchived {
			continue
		}
		var d ArchivedData
		if err := strictjson.Decode(e.Data, &d); err != nil || d.Run == "" {
			return nil, &Error{Reason: ReasonPruneLog, Detail: fmt.Sprintf("%s line %d: %s: %v", LogFile, i+1, e.Type, err)}
		}
		h.Archived[d.Run] = d
	}
	h.Length = len(events)
	if len(events) > 0 {
		h.Head = events[len(events)-1].Hash
	}
	return h, nil
}

// openLog opens the prune log for appending, creating it when absent.
func openLog(stateDir string) (*eventlog.Log, error) {
	p := filepath.Join(stateDir, LogFile)
	lg, err := eventlog.OpenBound(p, logBinding)
	if errors.Is(err, os.ErrNotExist) {
		return eventlog.Create(p, logBinding)
	}
	if err != nil {
		return nil, &Error{Reason: ReasonPruneLog, Detail: err.Error(), Err: err}
	}
	return lg, nil
}
