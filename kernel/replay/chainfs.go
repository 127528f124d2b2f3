package replay

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// DirFS is the run directory dir as AuditFS reads it: os.DirFS(dir), but
// with EventsFile the run's whole log, its sealed segments then the active
// file (eventlog.OpenChain), and refusals of the log naming the file and
// its line (eventlog.ReadFile).
func DirFS(dir string) fs.FS { return chainFS{dir: dir} }

type chainFS struct{ dir string }

// eventsPather is an fs.FS whose EventsFile is a log on disk, read by path.
type eventsPather interface {
	eventsPath() (string, bool)
}

func (c chainFS) eventsPath() (string, bool) { return filepath.Join(c.dir, EventsFile), true }

func (c chainFS) Open(name string) (fs.File, error) {
	if name != EventsFile {
		return os.DirFS(c.dir).Open(name)
	}
	p := filepath.Join(c.dir, EventsFile)
	files, err := eventlog.Files(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var size int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
	}
	rc, err := eventlog.OpenChain(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &chainFile{ReadCloser: rc, info: memInfo{name, size}}, nil
}

type chainFile struct {
	io.ReadCloser
	info memInfo
}

func (c *chainFile) Stat() (fs.FileInfo, error) { return c.info, nil }

// readEvents reads fsys's log: by path when fsys is a directory (the
// refusal names the segment), else from the stream.
func readEvents(fsys fs.FS) ([]eventlog.Event, error) {
	if ep, ok := fsys.(eventsPather); ok {
		if p, ok := ep.eventsPath(); ok {
			if _, err := eventlog.Files(p); err != nil {
				return nil, &AuditError{Reason: ReasonMissing, Detail: EventsFile + ": " + err.Error()}
			}
			return eventlog.ReadFile(p, nil)
		}
	}
	ef, err := fsys.Open(EventsFile)
	if err != nil {
		return nil, &AuditError{Reason: ReasonMissing, Detail: EventsFile + ": " + err.Error()}
	}
	defer ef.Close()
	return eventlog.Read(ef, nil)
}

// Located is err, a refusal of the log of the run in dir read as one
// stream (ReadChain's bytes), restated naming the file and its line: the
// log is read again by path. Any other error is returned as it is.
func Located(dir string, err error) error {
	var ae *AuditError
	if !errors.As(err, &ae) || ae.Reason != ReasonChain {
		return err
	}
	_, ferr := eventlog.ReadFile(filepath.Join(dir, EventsFile), nil)
	var ce *eventlog.ChainError
	if !errors.As(ferr, &ce) || ce.File == "" {
		return err
	}
	return &AuditError{Reason: ReasonChain, Line: ce.Line, Detail: fmt.Sprintf("%s: %s: %s", ce.File, ce.Reason, ce.Detail), Err: ce}
}

// ReadChain is the run directory dir's whole log as one stream's bytes
// (eventlog.OpenChain), at most max bytes.
func ReadChain(dir string, max int64) ([]byte, error) {
	rc, err := eventlog.OpenChain(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &AuditError{Reason: ReasonMissing, Detail: EventsFile + " is longer than the limit"}
	}
	return b, nil
}
