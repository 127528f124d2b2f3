package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/durable"
)

// PutMany stores every blob of bs that is not stored yet, with one
// directory fsync for all of them, and returns the bytes newly written.
// Each new blob is written and fsynced as Put does; one that exists is
// verified instead (ErrMismatch when it holds other bytes) and not
// rewritten. When PutMany returns nil, every blob of bs is durable. The
// digests are given by the caller (sha256 of each blob) and checked.
func (s *Store) PutMany(digests []string, bs [][]byte) (int64, error) {
	return s.putMany(digests, bs, s.Create)
}

// putMany is PutMany, staging each new blob in a Writer from create.
func (s *Store) putMany(digests []string, bs [][]byte, create func() (*Writer, error)) (int64, error) {
	if len(digests) != len(bs) {
		return 0, errors.New("blob: PutMany: digests and blobs differ in number")
	}
	var written int64
	linked := false
	for i, b := range bs {
		added, err := s.putOne(digests[i], b, create)
		if err != nil {
			return written, err
		}
		if added {
			written += int64(len(b))
			linked = true
		}
	}
	if linked {
		if err := syncDir(filepath.Join(s.dir, "sha256")); err != nil {
			return written, err
		}
	}
	return written, nil
}

// putOne links b under d unless it exists, reporting whether it did; it
// does not fsync the directory.
func (s *Store) putOne(d string, b []byte, create func() (*Writer, error)) (bool, error) {
	final, err := s.Path(d)
	if err != nil {
		return false, err
	}
	if h := sha256.Sum256(b); "sha256:"+hex.EncodeToString(h[:]) != d {
		return false, fmt.Errorf("blob: PutMany: blob named %s has other bytes", d)
	}
	if _, err := os.Lstat(final); err == nil {
		return false, s.Verify(d)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("blob: %w", err)
	}
	w, err := create()
	if err != nil {
		return false, err
	}
	defer w.Abort()
	if _, err := w.Write(b); err != nil {
		return false, fmt.Errorf("blob: %w", err)
	}
	tmp := w.f.Name()
	if err := durable.Sync(w.f); err != nil {
		return false, fmt.Errorf("blob: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return false, fmt.Errorf("blob: %w", err)
	}
	w.done = true
	defer os.Remove(tmp)
	if err := os.Chmod(tmp, 0o444); err != nil {
		return false, fmt.Errorf("blob: %w", err)
	}
	if err := os.Link(tmp, final); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return false, fmt.Errorf("blob: %w", err)
		}
		return false, s.Verify(d) // a concurrent writer stored it first
	}
	return true, nil
}
