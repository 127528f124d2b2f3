package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
)

// Log is an open writer on one run's events.ndjson. Its methods are safe
// for concurrent use; cross-process exclusion is the caller's (internal/lock).
type Log struct {
	mu       sync.Mutex
	f        *os.File
	path     string
	b        Binding
	events   []Event // the events after the first base ones (all, once loaded)
	repair   *tail   // damage at the end, repaired by the next Append
	err      error   // a failed write: the file may hold a torn line
	buf      []byte  // staged lines, written by Flush
	stagedAt []staged
	// repairStaged: the repair of the damaged tail is in buf
	repairStaged bool
	p            lineParser
	now          func() time.Time
	// last is the last complete line verified or written, with its '\n';
	// size the active file's length at Suspend, -1 when it cannot be
	// resumed.
	last []byte
	size int64
	chainState
}

// chainState is where a Log stands in its chain (see segments.go): what
// Open verified or trusted, and where the next event goes.
type chainState struct {
	n     int    // events in the whole chain, staged ones included
	seq   uint64 // seq of the last event
	hd    string // hash of the last event
	lines int    // physical lines of the whole chain (sealed and active)
	// base events precede events[0] and are not held: those of the chain's
	// files up to the first baseEnd bytes of baseFile (Open does not read
	// them, see headIndex); Load reads and verifies them.
	base     int
	baseFile string
	baseEnd  int64
	asize    int64 // the active file's length, staged bytes excluded
	nsealed  int   // sealed segments
	segMax   int64 // seal the active file once it is this long
	// lastFile and lastOff locate last: the active file, or the last
	// sealed segment right after a seal.
	lastFile string
	lastOff  int64
	// indexed is the seq the head index was last written at (or read
	// with): Suspend rewrites it only once it lags by IndexLag events.
	indexed uint64
}

// ErrNoBinding is returned by Open for a log without a complete event: its
// binding is unknown, so the caller must say it (OpenBound).
var ErrNoBinding = errors.New("log has no complete event to take the binding from")

// Create creates a new, empty log at path (O_EXCL, mode 0644) bound to b,
// and fsyncs it and its directory.
func Create(path string, b Binding) (*Log, error) {
	if err := checkBinding(b); err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	segMax, err := SegmentSize()
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create events: %w", err)
	}
	if err := durable.Sync(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("create events: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, fmt.Errorf("create events: %w", err)
	}
	l := &Log{f: f, path: path, b: b, now: time.Now}
	l.segMax, l.lastFile = segMax, path
	return l, nil
}

func checkBinding(b Binding) error {
	switch {
	case b.Run == "":
		return errors.New("binding: run is empty")
	case b.Contract == "":
		return errors.New("binding: contract is empty")
	}
	for name, s := range map[string]string{"run": b.Run, "contract": b.Contract, "source.commit": b.Source.Commit, "source.tree": b.Source.Tree} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("binding: %s is not valid UTF-8", name)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return durable.Sync(d)
}

// Open opens an existing log for appending. It reads and verifies the
// whole file, taking the binding from the first event. Damage at the end of
// the file (a torn final line, or malformed lines left by a crash during an
// earlier repair) is tolerated and repaired by the next Append; any other
// refusal is returned as a *ChainError.
func Open(path string) (*Log, error) { return open(path, nil) }

// OpenBound is Open for a log that must carry binding want; it also opens a
// log that holds no complete event yet.
func OpenBound(path string, want Binding) (*Log, error) {
	if err := checkBinding(want); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return open(path, &want)
}

func open(path string, want *Binding) (*Log, error) {
	segMax, err := SegmentSize()
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	l, err := openFast(path, want)
	if l == nil && err == nil {
		l, err = openSlow(path, want)
	}
	if err != nil {
		return nil, err
	}
	l.segMax = segMax
	return l, nil
}

// Append writes one event of type typ with data (any value that encodes as
// a JSON object; nil means {}) and fsyncs it before returning it: Stage
// then Flush (events staged before are written with it, first). After a
// failed write the Log refuses further appends: reopen it.
func (l *Log) Append(typ string, data any) (Event, error) {
	ev, err := l.Stage(typ, data)
	if err != nil {
		return Event{}, err
	}
	if err := l.Flush(); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// staged is one Stage in the pending buffer: its bytes [start, end), the
// staged event's own line beginning at ev (a recovery line may precede).
type staged struct{ start, ev, end int }

// Stage builds the next event of type typ, chained to the last one, and
// keeps it pending: Events, Len and Head include it at once, the file only
// after Flush, which writes every staged event with one write and one
// fsync (ADR 0019). Close flushes what is still staged. The crash hook
// counts staged events, so a test still kills the process at each event
// boundary of a batch (see CrashEnv).
func (l *Log) Stage(typ string, data any) (Event, error) {
	if !validType([]byte(typ)) {
		return Event{}, fmt.Errorf("append %q: type must be 1-%d characters of [A-Za-z0-9._-]", typ, maxType)
	}
	d, err := canonicalData(data)
	if err != nil {
		return Event{}, fmt.Errorf("append %s: %w", typ, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.f == nil:
		return Event{}, fmt.Errorf("append %s: log is closed", typ)
	case l.err != nil:
		return Event{}, fmt.Errorf("append %s: an earlier write failed, reopen the log: %w", typ, l.err)
	case l.n+2 > MaxEvents:
		return Event{}, fmt.Errorf("append %s: log holds %d events, the limit", typ, MaxEvents)
	}
	buf := l.buf
	st := staged{start: len(buf)}
	var added []Event
	seq, prev := l.seq, l.hd
	lines := l.lines
	tm := formatTime(l.now())
	if t := l.repair; t != nil && !l.repairStaged {
		if t.newline {
			buf = append(buf, '\n')
		}
		if !t.complete {
			rd := recoveredData(nil, t.line, t.bytes, t.sum[:])
			var ev Event
			if buf, ev, err = l.appendLine(buf, seq+1, TypeRecovered, tm, rd, prev); err != nil {
				return Event{}, fmt.Errorf("append %s: %w", TypeRecovered, err)
			}
			added = append(added, ev)
			seq, prev = ev.Seq, ev.Hash
			lines++
		}
	}
	st.ev = len(buf)
	buf, ev, err := l.appendLine(buf, seq+1, typ, tm, d, prev)
	if err != nil {
		return Event{}, fmt.Errorf("append %s: %w", typ, err)
	}
	st.end = len(buf)
	added = append(added, ev)
	l.buf = buf
	l.stagedAt = append(l.stagedAt, st)
	l.repairStaged = l.repair != nil
	l.events = append(l.events, added...)
	l.n += len(added)
	l.seq, l.hd = ev.Seq, ev.Hash
	l.lines = lines + 1
	return ev, nil
}

// Flush writes every staged event with one write and fsyncs the file once.
// With nothing staged it does nothing. A torn batch (a crash in the write)
// recovers as a torn line does: Open keeps and verifies every complete
// line before the tear and the next append records the tail.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *Log) flushLocked() error {
	if len(l.stagedAt) == 0 {
		return nil
	}
	switch {
	case l.f == nil:
		return fmt.Errorf("flush %s: log is closed", l.path)
	case l.err != nil:
		return fmt.Errorf("flush %s: an earlier write failed, reopen the log: %w", l.path, l.err)
	}
	buf := l.buf
	for _, st := range l.stagedAt {
		crashAt(l.f, buf, st)
	}
	if _, err := l.f.Write(buf); err != nil {
		l.err = err
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	if err := durable.Sync(l.f); err != nil {
		l.err = err
		return fmt.Errorf("append to %s: fsync: %w", l.path, err)
	}
	last := l.stagedAt[len(l.stagedAt)-1]
	l.last = append(l.last[:0], buf[last.ev:last.end]...)
	l.lastFile, l.lastOff = l.path, l.asize+int64(last.ev)
	l.asize += int64(len(buf))
	l.buf, l.stagedAt = buf[:0], l.stagedAt[:0]
	l.repair, l.repairStaged = nil, false
	if l.asize >= l.segMax {
		l.sealLocked()
	}
	return nil
}

// crashAt kills the process at the staged event st when the crash hook
// says so: before it (the batch's earlier events written and fsynced),
// torn (and the first half of its line), or after it (through its line).
func crashAt(f *os.File, buf []byte, st staged) {
	var upto int
	switch crashPoint() {
	case crashNone:
		return
	case crashBefore:
		upto = st.start
	case crashTorn:
		upto = st.ev + (st.end-st.ev)/2
	case crashAfter:
		upto = st.end
	}
	if upto > 0 {
		f.Write(buf[:upto])
		durable.Sync(f)
	}
	die()
}

// appendLine builds, self-checks and appends one line plus '\n' to buf.
func (l *Log) appendLine(buf []byte, seq uint64, typ, tm string, data []byte, prev string) ([]byte, Event, error) {
	line, _ := buildLine(nil, &l.b, seq, typ, tm, data, prev)
	if len(line) > MaxLine {
		return buf, Event{}, fmt.Errorf("line of %d bytes exceeds %d", len(line), MaxLine)
	}
	var f fields
	if err := l.p.parse(line, &f); err != nil {
		return buf, Event{}, fmt.Errorf("built a line readers would refuse: %w", err)
	}
	buf = append(buf, line...)
	buf = append(buf, '\n')
	return buf, eventOf(line, &f), nil
}

// canonicalData canonicalises an event's data, which must be an object.
func canonicalData(data any) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	switch d := data.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		if d == nil {
			return []byte("{}"), nil
		}
		b, err = canon.Transform(d)
	default:
		b, err = canon.Marshal(d)
	}
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("data: not a JSON object")
	}
	if err := validCanonical(b); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	return b, nil
}

func (l *Log) head() string { return l.hd }

// Events returns a copy of all events so far, sealed segments included: it
// loads what Open did not read (see Load). Should that load fail, it
// returns only the events Open read and the Log refuses further appends;
// a caller that must know calls Load first.
func (l *Log) Events() []Event {
	_ = l.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Len is the number of events.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Head is the hash of the last event, "" when the log is empty.
func (l *Log) Head() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head()
}

// Binding is the run, source and contract every event carries.
func (l *Log) Binding() Binding { return l.b }

// Damaged reports whether the file ends in damage (a torn line) that
// readers refuse until the next Append repairs it.
func (l *Log) Damaged() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.repair != nil
}

// Close flushes what is staged and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	ferr := l.flushLocked()
	err := l.f.Close()
	if ferr != nil {
		l.f = nil
		return ferr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	l.writeIndex()
	return nil
}

// Hash returns the hash event e should carry: "sha256:" + hex SHA-256 of
// the RFC 8785 canonical JSON of e without its hash member. It is the slow
// reference (full canonicalisation); readers use a streaming equivalent.
func Hash(e Event) (string, error) {
	type unhashed struct {
		V        int             `json:"v"`
		Seq      uint64          `json:"seq"`
		Run      string          `json:"run"`
		Type     string          `json:"type"`
		Time     string          `json:"time"`
		Source   Source          `json:"source"`
		Contract string          `json:"contract"`
		Data     json.RawMessage `json:"data"`
		Prev     *string         `json:"prev"`
	}
	return canon.Digest(unhashed{e.V, e.Seq, e.Run, e.Type, e.Time, e.Source, e.Contract, e.Data, e.Prev})
}
