package run

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/lock"
)

// Status is a reconciled report plus what only the live directory shows:
// the writer lock, interrupted checks and staleness.
type Status struct {
	*Report
	// Writer is the lock holder, if a lock file exists.
	Writer *Writer `json:"writer,omitempty"`
	// Interrupted lists checks that started and never finished while no
	// live writer holds the run: the harness died mid-check.
	Interrupted []string `json:"interrupted,omitempty"`
	// TornTail is set when the log ends in a partial line (a writer was
	// killed mid-append); the next writer records its recovery.
	TornTail bool `json:"torn_tail,omitempty"`
	// StaleReasons says why the run is (or just became) STALE.
	StaleReasons []string `json:"stale_reasons,omitempty"`
	// ProjectionLag is set when run.json trails the log (repaired by the
	// next writer); it is not tampering.
	ProjectionLag bool `json:"projection_lagging,omitempty"`
}

// Writer describes a run's lock holder.
type Writer struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Created time.Time `json:"created"`
	Alive   bool      `json:"alive"`
}

// Inspect reconciles run id and reports it. A run whose log, projection or
// evidence disagree returns the *AuditError. When the code or contract moved
// since planning and no live writer holds the run, it is moved to STALE.
func Inspect(ctx context.Context, stateDir, id string, fresh Freshness) (*Status, error) {
	store := NewStore(stateDir)
	id, err := store.Resolve(id)
	if err != nil {
		return nil, err
	}
	dir := store.Path(id)
	st := &Status{}
	if o, err := lock.Read(filepath.Join(dir, LockFile)); err == nil {
		st.Writer = &Writer{PID: o.PID, Host: o.Host, Created: o.Created, Alive: lock.Alive(o)}
	}
	rep, planned, err := auditDir(dir)
	switch {
	case err == nil:
	case isReason(err, ReasonProjectionLag):
		st.ProjectionLag = true
	case isTorn(err):
		// Replay the complete lines; report the torn tail.
		st.TornTail = true
		rep, planned, err = auditComplete(dir)
		if err != nil && !isReason(err, ReasonProjectionLag) {
			return nil, err
		}
		st.ProjectionLag = err != nil
	default:
		return nil, err
	}
	st.Report = rep
	liveWriter := st.Writer != nil && st.Writer.Alive
	if !liveWriter {
		st.Interrupted = rep.Pending
	}
	if rep.State.Terminal() || rep.State == Stale || rep.State == Blocked {
		return st, nil
	}
	ferr := checkFresh(ctx, *planned, fresh)
	var se *StaleError
	if !errors.As(ferr, &se) {
		return st, ferr
	}
	st.StaleReasons = se.Reasons
	if liveWriter {
		return st, nil // report it; the live writer will find it too
	}
	r, err := Open(stateDir, id)
	if err != nil {
		return st, nil // could not take the run over; the report stands
	}
	defer r.Close()
	if err := r.MarkStaleIfChanged(ctx, fresh); err != nil && !errors.As(err, &se) {
		return st, err
	}
	st.Report = r.Report()
	return st, nil
}

func isTorn(err error) bool {
	var ce *eventlog.ChainError
	return errors.As(err, &ce) && ce.Reason == eventlog.TornTail
}

// auditComplete audits the complete lines of a log whose tail is torn.
func auditComplete(dir string) (*Report, *PlannedData, error) {
	// run.json before the log, as in auditFS: it may trail, never lead.
	proj, err := readBounded(os.DirFS(dir), RunFile, maxRunJSON)
	if err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, nil, err
	}
	i := len(b)
	for i > 0 && b[i-1] != '\n' {
		i--
	}
	fsys := overlayFS{dir: dir, files: map[string][]byte{EventsFile: b[:i], RunFile: proj}}
	return auditFS(fsys)
}

// overlayFS serves some files from memory and the rest from a directory.
type overlayFS struct {
	dir   string
	files map[string][]byte
}

func (o overlayFS) Open(name string) (fs.File, error) {
	if data, ok := o.files[name]; ok {
		return &memFile{Reader: bytes.NewReader(data), name: name, size: int64(len(data))}, nil
	}
	return os.DirFS(o.dir).Open(name)
}

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
