package eventlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
)

// TypeRecovered is the event the writer appends after a damaged tail.
const TypeRecovered = "log.recovered"

// Bounds of a damaged region a log.recovered event may cover: the torn
// fragment plus what a crash during an earlier recovery may have left.
const (
	maxRegionBytes = 2*MaxLine + 4096
	maxRegionLines = 8
)

// Summary is what Verify learns about a log without keeping its events.
type Summary struct {
	Len       int    // verified events
	Head      string // hash of the last verified event, "" when none
	Recovered []int  // lines of damaged regions covered by log.recovered events
}

// reader verifies a log line by line. A valid line costs no allocation.
type reader struct {
	p    lineParser
	f    fields
	h    hash.Hash
	cur  []byte // hash of the line being checked
	rsum []byte // digest of the damaged region

	want                            bool
	bound                           bool
	bRun, bCommit, bTree, bContract []byte // raw canonical content of the binding
	line                            int
	n                               int
	seq                             uint64
	head                            [sha256.Size]byte
	recovered                       []int
	onEvent                         func(line []byte, f *fields)
	acceptTorn                      bool
	scratch                         []byte
	big                             []byte // a line longer than the read buffer

	reg region // the damaged region being scanned, if any
}

// region is a run of malformed lines that only a log.recovered event
// naming its first line, length and digest can excuse.
type region struct {
	active bool
	line   int
	err    *ChainError
	h      hash.Hash
	n      int64
	lines  int
}

// tail describes damage at the end of a log that a writer may repair.
type tail struct {
	line     int               // first line of the damaged region
	bytes    int64             // its length (lines joined by '\n')
	sum      [sha256.Size]byte // its SHA-256
	newline  bool              // the file does not end in '\n'
	complete bool              // the fragment was a whole line missing only '\n'
}

func newReader(want *Binding) *reader {
	r := &reader{h: sha256.New(), cur: make([]byte, 0, sha256.Size), rsum: make([]byte, 0, sha256.Size), scratch: make([]byte, 0, 128)}
	if want != nil {
		r.want, r.bound = true, true
		r.bRun = rawString(want.Run)
		r.bCommit = rawString(want.Source.Commit)
		r.bTree = rawString(want.Source.Tree)
		r.bContract = rawString(want.Contract)
	}
	return r
}

func rawString(s string) []byte {
	b := appendString(nil, s)
	return b[1 : len(b)-1]
}

func (r *reader) fail(reason Reason, format string, args ...any) *ChainError {
	return &ChainError{Reason: reason, Line: r.line, Detail: fmt.Sprintf(format, args...)}
}

// check validates line r.line as the next event without changing state.
// envelope reports whether the line at least had a valid envelope.
func (r *reader) check(line []byte) (ce *ChainError, envelope bool) {
	f := &r.f
	if err := r.p.parse(line, f); err != nil {
		return r.fail(Malformed, "%v", err), false
	}
	r.cur = lineHash(r.h, line, f, r.cur)
	if !hexEqual(f.hash.of(line), r.cur) {
		return r.fail(BrokenLink, "hash does not match the line's content (want sha256:%x)", r.cur), true
	}
	if r.n >= MaxEvents {
		return r.fail(Malformed, "more than %d events", MaxEvents), true
	}
	if r.bound {
		what := "line 1"
		if r.want {
			what = "the expected binding"
		}
		switch {
		case !bytes.Equal(f.run.of(line), r.bRun):
			return r.fail(ForeignBinding, "run %q differs from %s", unquote(f.run.of(line)), what), true
		case !bytes.Equal(f.contract.of(line), r.bContract):
			return r.fail(ForeignBinding, "contract %q differs from %s", unquote(f.contract.of(line)), what), true
		case !bytes.Equal(f.commit.of(line), r.bCommit):
			return r.fail(ForeignBinding, "source.commit %q differs from %s", unquote(f.commit.of(line)), what), true
		case !bytes.Equal(f.tree.of(line), r.bTree):
			return r.fail(ForeignBinding, "source.tree %q differs from %s", unquote(f.tree.of(line)), what), true
		}
	}
	if r.n == 0 {
		if f.seq != 1 {
			return r.fail(SeqGap, "first event has seq %d, want 1", f.seq), true
		}
		return nil, true
	}
	if f.prevNull {
		return r.fail(UnchainedAfterChained, "prev is null after %d chained events", r.n), true
	}
	if f.seq != r.seq+1 {
		return r.fail(SeqGap, "seq %d follows seq %d", f.seq, r.seq), true
	}
	if !hexEqual(f.prev.of(line), r.head[:]) {
		return r.fail(BrokenLink, "prev sha256:%s is not the previous event's hash sha256:%x", f.prev.of(line), r.head), true
	}
	return nil, true
}

// commit accepts the line last passed to check.
func (r *reader) commit(line []byte) {
	f := &r.f
	if !r.bound {
		r.bound = true
		r.bRun = bytes.Clone(f.run.of(line))
		r.bCommit = bytes.Clone(f.commit.of(line))
		r.bTree = bytes.Clone(f.tree.of(line))
		r.bContract = bytes.Clone(f.contract.of(line))
	}
	r.n++
	r.seq = f.seq
	copy(r.head[:], r.cur)
	if r.onEvent != nil {
		r.onEvent(line, f)
	}
}

// recovers reports whether the checked line is the log.recovered event for
// the active region.
func (r *reader) recovers(line []byte) bool {
	if string(r.f.typ.of(line)) != TypeRecovered {
		return false
	}
	r.scratch = recoveredData(r.scratch[:0], r.reg.line, r.reg.n, r.reg.h.Sum(r.rsum[:0]))
	return bytes.Equal(r.f.data.of(line), r.scratch)
}

// recoveredData is the canonical data of a log.recovered event.
func recoveredData(dst []byte, line int, n int64, sum []byte) []byte {
	dst = append(dst, `{"bytes":`...)
	dst = strconv.AppendInt(dst, n, 10)
	dst = append(dst, `,"line":`...)
	dst = strconv.AppendInt(dst, int64(line), 10)
	dst = append(dst, `,"sha256":"`...)
	dst = hex.AppendEncode(dst, sum)
	return append(dst, `"}`...)
}

func (r *reader) startRegion(ce *ChainError) {
	if r.reg.h == nil {
		r.reg.h = sha256.New()
	}
	r.reg.h.Reset()
	r.reg.active, r.reg.line, r.reg.err, r.reg.n, r.reg.lines = true, r.line, ce, 0, 1
}

// grow adds bytes to the active region; false when it outgrows its bounds.
func (r *reader) grow(b []byte) bool {
	r.reg.h.Write(b)
	r.reg.n += int64(len(b))
	return r.reg.n <= maxRegionBytes
}

// addLine adds a further line to the active region.
func (r *reader) addLine(line []byte) bool {
	r.reg.lines++
	return r.reg.lines <= maxRegionLines && r.grow(lf) && r.grow(line)
}

// lf separates the lines of a damaged region.
var lf = []byte{'\n'}

// complete handles one '\n'-terminated line (without its '\n').
func (r *reader) complete(line []byte) *ChainError {
	ce, envelope := r.check(line)
	if r.reg.active {
		if ce == nil && r.recovers(line) {
			r.recovered = append(r.recovered, r.reg.line)
			r.reg.active = false
			r.commit(line)
			return nil
		}
		if envelope || !r.addLine(line) {
			return r.reg.err
		}
		return nil
	}
	switch {
	case ce == nil:
		r.commit(line)
		return nil
	case envelope:
		return ce
	}
	r.startRegion(ce)
	r.grow(line)
	return nil
}

// run reads the whole log. It returns the first refusal, and a tail when
// that refusal is damage at the end of the file that a writer may repair.
func (r *reader) run(src io.Reader) (*ChainError, *tail, error) {
	return r.runBuffered(bufio.NewReaderSize(src, readBuf))
}

// runBuffered is run on a buffered reader.
func (r *reader) runBuffered(br *bufio.Reader) (*ChainError, *tail, error) {
	for {
		b, err := r.next(br)
		switch {
		case err == nil:
			r.line++
			if ce := r.complete(b[:len(b)-1]); ce != nil {
				return ce, nil, nil
			}
		case errors.Is(err, errTooLong):
			r.line++
			ce, eof, rerr := r.long(br, b)
			if rerr != nil || ce != nil {
				return ce, nil, rerr
			}
			if eof {
				return r.end(true)
			}
		case errors.Is(err, io.EOF):
			if len(b) == 0 {
				return r.end(false)
			}
			r.line++
			return r.torn(b)
		default:
			return nil, nil, fmt.Errorf("read events: %w", err)
		}
	}
}

// readBuf is the read buffer; longer lines (up to MaxLine) are assembled in
// reader.big.
const readBuf = 64 << 10

var errTooLong = errors.New("line too long")

// next returns the next line with its '\n', or a final fragment with
// io.EOF, or the first bytes of a line over MaxLine with errTooLong.
func (r *reader) next(br *bufio.Reader) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return b, err
	}
	r.big = append(r.big[:0], b...)
	for {
		b, err = br.ReadSlice('\n')
		r.big = append(r.big, b...)
		if len(r.big) > MaxLine+1 {
			return r.big, errTooLong
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return r.big, err
		}
	}
}

// long consumes a line longer than MaxLine into a damaged region.
func (r *reader) long(br *bufio.Reader, b []byte) (ce *ChainError, eof bool, err error) {
	if r.reg.active {
		r.reg.lines++
		if r.reg.lines > maxRegionLines || !r.grow(lf) {
			return r.reg.err, false, nil
		}
	} else {
		r.startRegion(r.fail(Malformed, "line longer than %d bytes", MaxLine))
	}
	for {
		if !r.grow(bytes.TrimSuffix(b, []byte{'\n'})) {
			return r.reg.err, false, nil
		}
		if len(b) > 0 && b[len(b)-1] == '\n' {
			return nil, false, nil
		}
		b, err = br.ReadSlice('\n')
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			if !r.grow(b) {
				return r.reg.err, false, nil
			}
			return nil, true, nil
		default:
			return nil, false, fmt.Errorf("read events: %w", err)
		}
	}
}

// torn handles a final line without '\n'.
func (r *reader) torn(b []byte) (*ChainError, *tail, error) {
	ce, envelope := r.check(b)
	if r.reg.active {
		if ce == nil && r.recovers(b) {
			t := r.tailOf(true)
			t.complete = true
			err := r.reg.err
			if r.acceptTorn {
				r.recovered = append(r.recovered, r.reg.line)
				r.reg.active = false
				r.commit(b)
			}
			return err, t, nil
		}
		if envelope || !r.addLine(b) {
			return r.reg.err, nil, nil
		}
		return r.end(true)
	}
	switch {
	case ce == nil:
		ce = r.fail(TornTail, "the last %d bytes are a whole event without its '\\n'", len(b))
		if r.acceptTorn {
			r.commit(b)
		}
		return ce, &tail{line: r.line, newline: true, complete: true}, nil
	case envelope:
		return ce, nil, nil
	}
	r.startRegion(r.fail(TornTail, "the last %d bytes are not '\\n'-terminated (%v)", len(b), ce.Detail))
	r.grow(b)
	return r.end(true)
}

// end finishes at EOF: a damaged region still open is the refusal, and a
// writer may repair it.
func (r *reader) end(newline bool) (*ChainError, *tail, error) {
	if !r.reg.active {
		return nil, nil, nil
	}
	return r.reg.err, r.tailOf(newline), nil
}

func (r *reader) tailOf(newline bool) *tail {
	t := &tail{line: r.reg.line, bytes: r.reg.n, newline: newline}
	r.reg.h.Sum(t.sum[:0])
	return t
}

func (r *reader) summary() Summary {
	s := Summary{Len: r.n, Recovered: r.recovered}
	if r.n > 0 {
		s.Head = "sha256:" + hex.EncodeToString(r.head[:])
	}
	return s
}

// Read parses and verifies a whole log. It returns the verified prefix and,
// when the log is refused, a *ChainError naming the reason and line (an I/O
// failure is returned as a plain error). With want nil the binding is taken
// from the first event.
func Read(src io.Reader, want *Binding) ([]Event, error) {
	r := newReader(want)
	var events []Event
	r.onEvent = func(line []byte, f *fields) { events = append(events, eventOf(line, f)) }
	ce, _, err := r.run(src)
	if err != nil {
		return events, err
	}
	if ce != nil {
		return events, ce
	}
	return events, nil
}

// ReadFile is Read on the log whose active file is path: its sealed
// segments in order, then the active file, as one chain. A refusal names
// the file (ChainError.File) and the line in it.
func ReadFile(path string, want *Binding) ([]Event, error) {
	r := newReader(want)
	var events []Event
	r.onEvent = func(line []byte, f *fields) { events = append(events, eventOf(line, f)) }
	ce, _, err := r.readChain(path)
	if err != nil {
		return events, err
	}
	if ce != nil {
		return events, ce
	}
	return events, nil
}

// Verify checks a log as Read does, keeping no events. On refusal the
// summary describes the verified prefix.
func Verify(src io.Reader, want *Binding) (Summary, error) {
	r := newReader(want)
	ce, _, err := r.run(src)
	if err != nil {
		return r.summary(), err
	}
	if ce != nil {
		return r.summary(), ce
	}
	return r.summary(), nil
}

// Intact returns the part of log b that precedes damage at its end which
// the next Append would repair (a torn fragment, and malformed lines a
// crash during an earlier repair left), and whether there was such damage.
// A final event that lost only its '\n' is kept, with the '\n' restored, as
// the repair keeps it. Without repairable damage b is returned as is, and
// Read reports whatever else is wrong with it.
func Intact(b []byte) ([]byte, bool) {
	r := newReader(nil)
	r.acceptTorn = true
	_, t, err := r.run(bytes.NewReader(b))
	if err != nil || t == nil {
		return b, false
	}
	if t.complete {
		return append(b[:len(b):len(b)], '\n'), true
	}
	// Keep the first t.line-1 lines.
	end := 0
	for range t.line - 1 {
		i := bytes.IndexByte(b[end:], '\n')
		if i < 0 {
			return b, false
		}
		end += i + 1
	}
	return b[:end], true
}
