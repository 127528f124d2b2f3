// Package record is the writer side of checkpoints: it signs a checkpoint
// of a run at its current head and records it in the run directory
// through the kernel's writer (internal/run), which holds the run's writer
// lock. Package checkpoint, which the bundle verifier imports, only reads
// and verifies checkpoints.
package record

import (
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Recorded is a checkpoint written to a run directory.
type Recorded struct {
	checkpoint.Checkpoint
	KeyID    string
	Path     string // absolute path of the envelope file
	Envelope []byte
}

// Checkpoint signs a checkpoint of the run in stateDir at its current head,
// writes it to <run>/checkpoints/<length>.dsse.json and records a
// checkpoint.signed event through the kernel, which holds the run's writer
// lock, replays the event and keeps run.json current.
func Checkpoint(stateDir, id string, s envelope.Signer, now time.Time) (*Recorded, error) {
	r, err := run.Open(stateDir, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	head, length := r.Head()
	c := checkpoint.Checkpoint{V: checkpoint.Version, Run: r.ID, Length: length, Head: head, Time: now.UTC().Format(time.RFC3339Nano)}
	env, err := checkpoint.Sign(s, c)
	if err != nil {
		return nil, err
	}
	rel := filepath.ToSlash(filepath.Join(checkpoint.Dir, checkpoint.FileName(c.Length)))
	p := filepath.Join(r.Dir, checkpoint.Dir, checkpoint.FileName(c.Length))
	if err := writeAtomic(p, env); err != nil {
		return nil, err
	}
	if _, err := r.Append(replay.TypeCheckpoint, checkpoint.SignedData{Length: c.Length, Head: c.Head, KeyID: s.KeyID(), Time: c.Time, File: rel}); err != nil {
		return nil, err
	}
	return &Recorded{Checkpoint: c, KeyID: s.KeyID(), Path: p, Envelope: env}, nil
}

// writeAtomic writes b to p (creating its directory) via durable.WriteFile.
func writeAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(p, b, 0o444)
}
