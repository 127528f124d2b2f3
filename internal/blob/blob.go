// Package blob is the run directory's content-addressed evidence store:
// blobs/sha256/<hex>, each created once with O_EXCL and never overwritten.
package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/durable"
)

// ErrMismatch reports a stored blob whose content does not match its digest.
// It has a DigestMismatch method, so consumers that must not import this
// package (kernel/input) recognise it through errors.As on an interface.
var ErrMismatch error = mismatchError{}

type mismatchError struct{}

func (mismatchError) Error() string { return "blob: content does not match its digest" }

// DigestMismatch reports true: the error is a digest mismatch.
func (mismatchError) DigestMismatch() bool { return true }

// Store is a blob directory (<run>/blobs).
type Store struct{ dir string }

// New returns the store rooted at dir (created on first write).
func New(dir string) *Store { return &Store{dir: dir} }

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether d has the form sha256:<64 lowercase hex>.
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// Path returns the file path of digest d ("sha256:<hex>").
func (s *Store) Path(d string) (string, error) {
	if !ValidDigest(d) {
		return "", fmt.Errorf("blob: invalid digest %q", d)
	}
	return filepath.Join(s.dir, "sha256", d[len("sha256:"):]), nil
}

// Writer stages a blob in a temporary file and commits it under its digest.
type Writer struct {
	s    *Store
	f    *os.File
	h    hash.Hash
	n    int64
	done bool
}

// Create starts a new blob.
func (s *Store) Create() (*Writer, error) {
	dir := filepath.Join(s.dir, "sha256")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &Writer{s: s, f: f, h: sha256.New()}, nil
}

func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// Commit fsyncs the staged bytes and links them to blobs/sha256/<hex> with
// O_EXCL semantics: an existing blob of the same digest is kept as it is.
func (w *Writer) Commit() (digest string, size int64, err error) {
	if w.done {
		return "", 0, errors.New("blob: writer already closed")
	}
	w.done = true
	tmp := w.f.Name()
	defer os.Remove(tmp)
	digest = "sha256:" + hex.EncodeToString(w.h.Sum(nil))
	final, _ := w.s.Path(digest)
	if _, err := os.Lstat(final); err == nil {
		// Already stored (an empty stream, a repeated output): no new
		// bytes to make durable, but the kept file must hold these bytes.
		w.f.Close()
		if err := w.s.Verify(digest); err != nil {
			return "", 0, err
		}
		return digest, w.n, nil
	}
	if err := durable.Sync(w.f); err != nil {
		w.f.Close()
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	if err := os.Chmod(tmp, 0o444); err != nil {
		return "", 0, fmt.Errorf("blob: %w", err)
	}
	// link(2) fails with EEXIST instead of replacing: the O_EXCL guarantee.
	if err := os.Link(tmp, final); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return "", 0, fmt.Errorf("blob: %w", err)
		}
		// A concurrent writer stored it first; the existing blob is kept,
		// so it must hold these bytes: a tampered or corrupt file under
		// this name is reported now rather than silently standing in for
		// the evidence just written.
		if err := w.s.Verify(digest); err != nil {
			return "", 0, err
		}
	}
	if err := syncDir(filepath.Dir(final)); err != nil {
		return "", 0, err
	}
	return digest, w.n, nil
}

// Abort discards the staged bytes.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

// Put stores b and returns its digest.
func (s *Store) Put(b []byte) (string, error) {
	w, err := s.Create()
	if err != nil {
		return "", err
	}
	if _, err := w.Write(b); err != nil {
		w.Abort()
		return "", fmt.Errorf("blob: %w", err)
	}
	d, _, err := w.Commit()
	return d, err
}

// Open opens blob d for reading and checks nothing: use Verify for that.
func (s *Store) Open(d string) (*os.File, error) {
	p, err := s.Path(d)
	if err != nil {
		return nil, err
	}
	return bounded.Open(p)
}

// Verify re-hashes blob d and reports a mismatch (ErrMismatch, also for a
// blob that is not a regular file) or absence.
func (s *Store) Verify(d string) error {
	p, err := s.Path(d)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrMismatch, d)
	}
	f, err := bounded.Open(p)
	if errors.As(err, new(*bounded.NotRegularError)) {
		return fmt.Errorf("%w: %s is not a regular file", ErrMismatch, d)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d {
		return fmt.Errorf("%w: %s has digest %s", ErrMismatch, d, got)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	defer d.Close()
	if err := durable.Sync(d); err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	return nil
}
