package replay

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// AuditIntact audits the intact lines of the run in directory dir whose
// log tail is damaged (see eventlog.Intact), returning the replay too, for
// a writer that continues from it; ok is false when the log has no such
// damage.
func AuditIntact(dir string) (rep *Report, f *Folder, ok bool, err error) {
	// run.json before the log, as in auditFS: it may trail, never lead.
	proj, err := readBounded(os.DirFS(dir), RunFile, maxRunJSON)
	if err != nil {
		return nil, nil, false, err
	}
	b, err := ReadChain(dir, maxChain)
	if err != nil {
		return nil, nil, false, err
	}
	intact, ok := eventlog.Intact(b)
	if !ok {
		return nil, nil, false, nil
	}
	fsys := overlayFS{dir: dir, files: map[string][]byte{EventsFile: intact, RunFile: proj}}
	rep, f, err = auditFS(fsys)
	return rep, f, true, err
}

// Overlay is the run directory dir with some of its files replaced by the
// bytes in files (by name, e.g. EventsFile): what AuditFS reads when a
// caller has already read and bounded those files and must audit exactly
// those bytes (bundle export packs the bytes it audited).
func Overlay(dir string, files map[string][]byte) fs.FS { return overlayFS{dir: dir, files: files} }

// overlayFS serves some files from memory and the rest from a directory.
type overlayFS struct {
	dir   string
	files map[string][]byte
}

func (o overlayFS) Open(name string) (fs.File, error) {
	if data, ok := o.files[name]; ok {
		return &memFile{Reader: bytes.NewReader(data), name: name, size: int64(len(data))}, nil
	}
	return DirFS(o.dir).Open(name)
}

// eventsPath: the log is read from the directory unless it is overlaid.
func (o overlayFS) eventsPath() (string, bool) {
	if _, ok := o.files[EventsFile]; ok {
		return "", false
	}
	return filepath.Join(o.dir, EventsFile), true
}

// maxChain bounds a log read whole into memory (AuditIntact).
const maxChain = 1 << 30

type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (m *memFile) Stat() (fs.FileInfo, error) { return memInfo{m.name, m.size}, nil }
func (m *memFile) Close() error               { return nil }

type memInfo struct {
	name string
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
