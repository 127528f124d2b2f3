package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/bounded"
)

// SignedData is the data of the checkpoint.signed event (written by
// internal/record).
type SignedData struct {
	Length int    `json:"length"`
	Head   string `json:"head"`
	KeyID  string `json:"key_id"`
	Time   string `json:"time"`
	File   string `json:"file"` // relative to the run directory
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
	f, err := bounded.Open(p)
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
