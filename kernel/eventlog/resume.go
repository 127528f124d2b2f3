package eventlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrChanged refuses Resume: the file no longer starts with the bytes the
// Log verified (it is shorter, or its last known line differs), or what was
// appended since does not verify as a clean continuation (a torn tail, a
// damaged region, a broken link). The caller reopens the log with Open,
// which verifies the whole file and applies its torn-tail semantics.
var ErrChanged = errors.New("log changed under a suspended writer")

// Suspend flushes what is staged and closes the file, keeping what the Log
// verified (events, head, size, last line) so that Resume can take the file
// up again reading only what was appended meanwhile. A Log with damage at
// its end or a failed write suspends but cannot be resumed.
func (l *Log) Suspend() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	ferr := l.flushLocked()
	var size int64 = -1
	if ferr == nil && l.err == nil && l.repair == nil && l.last != nil {
		if fi, err := l.f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	cerr := l.f.Close()
	l.f, l.size = nil, size
	if ferr != nil {
		return ferr
	}
	if cerr == nil {
		l.writeIndexDue()
	}
	if cerr != nil {
		return fmt.Errorf("close %s: %w", l.path, cerr)
	}
	return nil
}

// Resume reopens a suspended Log. The file must be at least as long as it
// was at Suspend and hold, ending at that offset, exactly the last line the
// Log verified: the next append then chains onto the file's real last
// line, never onto a stale head. (An edit of an earlier line is not looked
// for here; every Verify, audit and bundle check refuses it.) The lines
// appended since are verified to chain from the known head, with the
// binding, and returned; any defect is ErrChanged.
func (l *Log) Resume() ([]Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil || l.size < 0 || l.last == nil {
		return nil, fmt.Errorf("resume %s: %w (not suspended cleanly)", l.path, ErrChanged)
	}
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("resume events: %w", err)
	}
	added, size, err := l.resumeFrom(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.f, l.size, l.asize = f, size, size
	evs := stripLines(added)
	l.events = append(l.events, evs...)
	l.n += len(evs)
	l.lines += len(added)
	if len(added) > 0 {
		e := evs[len(evs)-1]
		l.seq, l.hd = e.Seq, e.Hash
		l.last = added[len(added)-1].line
		l.lastFile, l.lastOff = l.path, size-int64(len(l.last))
	}
	return evs, nil
}

// resumeFrom checks the known prefix of f and verifies what follows it.
func (l *Log) resumeFrom(f *os.File) ([]resumed, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("resume events: %w", err)
	}
	size := fi.Size()
	if size < l.size {
		return nil, 0, fmt.Errorf("resume %s: %w (%d bytes, %d verified)", l.path, ErrChanged, size, l.size)
	}
	if !notExist(segPath(l.path, l.nsealed+1)) {
		return nil, 0, fmt.Errorf("resume %s: %w (the active file was sealed meanwhile)", l.path, ErrChanged)
	}
	if l.lastFile == l.path {
		if err := l.checkLast(f); err != nil {
			return nil, 0, err
		}
	}
	if size == l.size {
		return nil, size, nil
	}
	r := newReader(&l.b)
	r.line, r.n, r.seq = l.lines, l.n, l.seq
	if h, err := hex.DecodeString(strings.TrimPrefix(l.hd, "sha256:")); err != nil || len(h) != len(r.head) {
		return nil, 0, fmt.Errorf("resume %s: %w (head %q)", l.path, ErrChanged, l.hd)
	} else {
		copy(r.head[:], h)
	}
	var added []resumed
	r.onEvent = func(line []byte, fl *fields) {
		added = append(added, resumed{eventOf(line, fl), append(append([]byte(nil), line...), '\n')})
	}
	ce, t, err := r.run(io.NewSectionReader(f, l.size, size-l.size))
	switch {
	case err != nil:
		return nil, 0, err
	case ce != nil || t != nil || len(r.recovered) > 0 || r.line != l.lines+len(added):
		return nil, 0, fmt.Errorf("resume %s: %w (%v)", l.path, ErrChanged, ce)
	}
	return added, size, nil
}

// checkLast checks that f holds, ending at the size verified, the last
// line verified.
func (l *Log) checkLast(f *os.File) error {
	at := l.size - int64(len(l.last))
	got := make([]byte, len(l.last))
	if at < 0 {
		return fmt.Errorf("resume %s: %w (size below the last line)", l.path, ErrChanged)
	}
	if _, err := f.ReadAt(got, at); err != nil {
		return fmt.Errorf("resume events: %w", err)
	}
	if !bytes.Equal(got, l.last) {
		return fmt.Errorf("resume %s: %w (the last verified line, at byte %d, differs)", l.path, ErrChanged, at)
	}
	return nil
}

// resumed is an event read by Resume with its line (and '\n').
type resumed struct {
	Event
	line []byte
}

func stripLines(rs []resumed) []Event {
	out := make([]Event, len(rs))
	for i, r := range rs {
		out[i] = r.Event
	}
	return out
}
