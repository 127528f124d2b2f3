package app

import (
	"encoding/base64"
	"fmt"
	"io"
	"path/filepath"
	"unicode/utf8"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Output is a check's recorded output in an audited run: its result and
// the run's blob store, open until Close. Every read checks the blob
// against the digest and size the log recorded.
type Output struct {
	RunID string
	Check replay.CheckReport
	blobs *blob.Store
	done  func()
}

// NoResultError is a check the run has no result for. Its class is usage.
type NoResultError struct{ Run, Check string }

func (e *NoResultError) Error() string {
	return fmt.Sprintf("run %s has no result for check %q", e.Run, e.Check)
}

// Is reports whether target is exit.Usage.
func (e *NoResultError) Is(target error) bool { return target == exit.Usage }

// NoStreamError is a stream a check did not record. Its class is usage.
type NoStreamError struct{ Check, Stream string }

func (e *NoStreamError) Error() string {
	return fmt.Sprintf("check %q has no recorded %s", e.Check, e.Stream)
}

// Is reports whether target is exit.Usage.
func (e *NoStreamError) Is(target error) bool { return target == exit.Usage }

// OpenOutput resolves id ("latest" too) in the state directory, audits the
// run (a projection that only lags its log is read from the log) and opens
// the output of check.
func OpenOutput(state, id, check string) (*Output, error) {
	store := run.NewStore(state)
	id, err := store.Resolve(id)
	if err != nil {
		return nil, err
	}
	rep, err := run.Audit(store.Path(id))
	if err != nil && !IsLag(err) {
		return nil, err
	}
	o := &Output{RunID: id}
	found := false
	for _, c := range rep.Checks {
		if c.ID == check {
			o.Check, found = c, true
		}
	}
	if !found {
		return nil, &NoResultError{Run: id, Check: check}
	}
	rd, _, done, err := run.ReadDir(state, id)
	if err != nil {
		return nil, exit.Wrap(exit.Refused, err)
	}
	o.blobs, o.done = blob.New(filepath.Join(rd, run.BlobDir)), done
	return o, nil
}

// Close releases the run directory (an archived run's extraction).
func (o *Output) Close() { o.done() }

// Stream returns the recorded stream name ("stdout" or "stderr").
func (o *Output) Stream(name string) (*runtime.Stream, error) {
	s := o.Check.Stdout
	if name == "stderr" {
		s = o.Check.Stderr
	}
	if s == nil {
		return nil, &NoStreamError{Check: o.Check.ID, Stream: name}
	}
	return s, nil
}

// Copy writes stream s's bytes to w.
func (o *Output) Copy(w io.Writer, s *runtime.Stream) error {
	f, err := o.blobs.Open(s.Digest)
	if err != nil {
		return exit.Wrap(exit.Refused, err)
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// StreamDoc is `proofgate output --json`: a check's captured stream with
// its recorded digest and size. Content is the bytes as UTF-8 text when
// they are valid UTF-8 (Encoding "utf-8"), else base64 (Encoding
// "base64"), so the document round-trips the exact bytes.
type StreamDoc struct {
	RunID     string `json:"run_id"`
	Check     string `json:"check"`
	Stream    string `json:"stream"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated"`
	Encoding  string `json:"encoding"`
	Content   string `json:"content"`
	// Stderr is the stderr document, beside stdout's when output --json
	// names no --stream.
	Stderr *StreamDoc `json:"stderr,omitempty"`
}

// Doc reads stream name (at most its recorded size, one byte more to
// notice a blob that grew) into a document.
func (o *Output) Doc(name string) (*StreamDoc, error) {
	s, err := o.Stream(name)
	if err != nil {
		return nil, err
	}
	f, err := o.blobs.Open(s.Digest)
	if err != nil {
		return nil, exit.Wrap(exit.Refused, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, s.Size+1))
	if err != nil {
		return nil, exit.Wrap(exit.Refused, err)
	}
	if int64(len(b)) != s.Size {
		return nil, exit.Wrap(exit.Refused, fmt.Errorf("the %s blob of check %q holds %d bytes, the log recorded %d", name, o.Check.ID, len(b), s.Size))
	}
	d := &StreamDoc{RunID: o.RunID, Check: o.Check.ID, Stream: name, Digest: s.Digest, Size: s.Size, Truncated: s.Truncated}
	if utf8.Valid(b) {
		d.Encoding, d.Content = "utf-8", string(b)
	} else {
		d.Encoding, d.Content = "base64", base64.StdEncoding.EncodeToString(b)
	}
	return d, nil
}
