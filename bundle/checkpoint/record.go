package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/kernel/durable"
	"github.com/proofgate/proofgate/kernel/run"
)

// SignedData is the data of the checkpoint.signed event.
type SignedData struct {
	Length int    `json:"length"`
	Head   string `json:"head"`
	KeyID  string `json:"key_id"`
	Time   string `json:"time"`
	File   string `json:"file"` // relative to the run directory
}

// Recorded is a checkpoint written to a run directory.
type Recorded struct {
	Checkpoint
	KeyID    string
	Path     string // absolute path of the envelope file
	Envelope []byte
}

// Record signs a checkpoint of the run in stateDir at its current head,
// writes it to <run>/checkpoints/<length>.dsse.json and records a
// checkpoint.signed event through the kernel, which holds the run's writer
// lock, replays the event and keeps run.json current.
func Record(stateDir, id string, s envelope.Signer, now time.Time) (*Recorded, error) {
	r, err := run.Open(stateDir, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	head, length := r.Head()
	c := Checkpoint{V: Version, Run: r.ID, Length: length, Head: head, Time: now.UTC().Format(time.RFC3339Nano)}
	env, err := Sign(s, c)
	if err != nil {
		return nil, err
	}
	rel := filepath.ToSlash(filepath.Join(Dir, FileName(c.Length)))
	p := filepath.Join(r.Dir, Dir, FileName(c.Length))
	if err := writeAtomic(p, env); err != nil {
		return nil, err
	}
	if _, err := r.Append(run.TypeCheckpoint, SignedData{Length: c.Length, Head: c.Head, KeyID: s.KeyID(), Time: c.Time, File: rel}); err != nil {
		return nil, err
	}
	return &Recorded{Checkpoint: c, KeyID: s.KeyID(), Path: p, Envelope: env}, nil
}

var nameRE = regexp.MustCompile(`^[0-9]{20}\.dsse\.json$`)

// Latest returns the newest checkpoint envelope in run directory dir, and
// its name, or nil when there is none.
func Latest(dir string) ([]byte, string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, Dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	latest := ""
	for _, e := range ents {
		if e.Type().IsRegular() && nameRE.MatchString(e.Name()) && e.Name() > latest {
			latest = e.Name()
		}
	}
	if latest == "" {
		return nil, "", nil
	}
	b, err := ReadFile(filepath.Join(dir, Dir, latest))
	return b, latest, err
}

// ReadFile reads a checkpoint file, bounded by envelope.MaxSize.
func ReadFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, envelope.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", p, err)
	}
	if len(b) > envelope.MaxSize {
		return nil, fmt.Errorf("checkpoint %s: larger than %d bytes", p, envelope.MaxSize)
	}
	return b, nil
}

// writeAtomic writes b to p (creating its directory) via durable.WriteFile.
func writeAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(p, b, 0o444)
}
