package eventlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// HeadFile is the head index of the log whose active file is events.ndjson
// (for X.ndjson it is X.head.json). See headIndex.
const HeadFile = "events.head.json"

// maxHeadFile bounds the head index.
const maxHeadFile = 4096

func headPath(active string) string {
	return filepath.Join(filepath.Dir(active), stem(active)+".head.json")
}

// headIndex is the head index: a cache of where the writer stood when it
// last closed the log, so that Open reads neither the sealed segments nor
// the part of the active file it already verified. It is canonical JSON,
// written by rename without fsync (after a power loss it may be old,
// missing or torn: Open then reads the active file whole).
//
// Open trusts it only as far as the file agrees: the line at
// File[Offset:Offset+Length] must be a whole event line whose own hash
// checks and whose seq and hash are Seq and Head; it must end at Bytes in
// the active file (or end the last sealed segment, Bytes 0); the active
// file must be at least Bytes long, must not be the last sealed segment,
// and segment Segments+1 must not exist. Then Open reads only the active
// file's bytes after Bytes, chaining them to that line. What it trusts
// without reading: that the bytes before are the valid chain they were
// when the writer verified or wrote them, and Lines (the chain's physical
// lines, which only log.recovered events name). That is safe for the same
// reason Resume's prefix check is: the writer only ever chains onto the
// real last line, whose hash it checks, and every verifier (Verify, audit,
// bundle, replay) reads every file and never reads the index, so an edited
// earlier line or a wrong cache is refused there, never accepted.
type headIndex struct {
	V        int    `json:"v"`
	Segments int    `json:"segments"`
	Bytes    int64  `json:"bytes"`
	Lines    int    `json:"lines"`
	Seq      uint64 `json:"seq"`
	Head     string `json:"head"`
	File     string `json:"file"`
	Offset   int64  `json:"offset"`
	Length   int    `json:"length"`
}

// IndexLag is how many events the head index may lag behind the log
// between Close and Close: a Suspend (an agent session's recorder
// suspends twice per tool call) rewrites it only once it lags that far.
// Replacing the index by rename costs ext4 an immediate write-back of the
// new file (auto_da_alloc), about a third of a governed call's time
// outside its fsyncs (ADR 0028); a lagging index only makes the next Open
// read and verify up to IndexLag more lines.
const IndexLag = 256

// writeIndexDue writes the head index when it lags by IndexLag events.
func (l *Log) writeIndexDue() {
	if l.seq-l.indexed >= IndexLag {
		l.writeIndex()
	}
}

// writeIndex records the Log's state in the head index, best effort: it is
// a cache. Nothing is written while a repair or staged events are pending.
func (l *Log) writeIndex() {
	if l.err != nil || l.repair != nil || l.last == nil || len(l.stagedAt) > 0 {
		return
	}
	ix := headIndex{V: 1, Segments: l.nsealed, Bytes: l.asize, Lines: l.lines, Seq: l.seq, Head: l.hd,
		File: filepath.Base(l.lastFile), Offset: l.lastOff, Length: len(l.last)}
	b, err := canon.Marshal(ix)
	if err != nil {
		return
	}
	if durable.ReplaceVolatile(headPath(l.path), b, 0o644) == nil {
		l.indexed = l.seq
	}
}

func readIndex(path string) (headIndex, bool) {
	var ix headIndex
	f, err := os.Open(headPath(path))
	if err != nil {
		return ix, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHeadFile+1))
	if err != nil || len(b) > maxHeadFile || strictjson.Decode(b, &ix) != nil {
		return ix, false
	}
	ok := ix.V == 1 && ix.Segments >= 0 && ix.Segments <= MaxSegments && ix.Bytes >= 0 && ix.Lines >= 1 &&
		ix.Seq >= 1 && ix.Offset >= 0 && ix.Length >= 2 && ix.Length <= MaxLine+1 && ix.Seq <= MaxEvents
	return ix, ok
}

// openFast opens the log through its head index; (nil, nil) means the
// index is missing or does not agree with the files: use openSlow.
func openFast(path string, want *Binding) (*Log, error) {
	ix, ok := readIndex(path)
	if !ok {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open events: %w", err)
	}
	l := fastState(f, path, ix, want)
	if l == nil {
		f.Close()
	}
	return l, nil
}

// fastState checks ix against the files and reads what follows it.
func fastState(f *os.File, path string, ix headIndex, want *Binding) *Log {
	afi, err := f.Stat()
	if err != nil || afi.Size() < ix.Bytes || !notExist(segPath(path, ix.Segments+1)) {
		return nil
	}
	lastPath, lf, baseEnd := path, f, ix.Bytes
	if ix.Segments > 0 {
		sfi, err := os.Stat(segPath(path, ix.Segments))
		if err != nil || os.SameFile(sfi, afi) {
			return nil
		}
		if ix.File == SegmentName(path, ix.Segments) {
			if ix.Bytes != 0 || ix.Offset+int64(ix.Length) != sfi.Size() {
				return nil
			}
			sf, err := os.Open(segPath(path, ix.Segments))
			if err != nil {
				return nil
			}
			defer sf.Close()
			lastPath, lf, baseEnd = sf.Name(), sf, sfi.Size()
		}
	}
	if lastPath == path && (ix.File != filepath.Base(path) || ix.Offset+int64(ix.Length) != ix.Bytes) {
		return nil
	}
	line := make([]byte, ix.Length)
	if _, err := lf.ReadAt(line, ix.Offset); err != nil || line[len(line)-1] != '\n' {
		return nil
	}
	var p lineParser
	var fl fields
	b, head, ok := checkLast(&p, &fl, line[:len(line)-1])
	if !ok || fl.seq != ix.Seq || "sha256:"+hex.EncodeToString(head[:]) != ix.Head || (want != nil && b != *want) {
		return nil
	}
	l := &Log{f: f, path: path, b: b, now: time.Now, last: line}
	l.nsealed, l.lastFile, l.lastOff = ix.Segments, lastPath, ix.Offset
	l.base, l.baseFile, l.baseEnd = int(ix.Seq), lastPath, baseEnd
	l.indexed = ix.Seq
	r := continueReader(b, want != nil, ix.Lines, ix.Seq, head)
	if !l.readRest(r, io.NewSectionReader(f, ix.Bytes, afi.Size()-ix.Bytes), afi.Size()) {
		return nil
	}
	return l
}

func segPath(active string, n int) string {
	return filepath.Join(filepath.Dir(active), SegmentName(active, n))
}

// checkLast parses a whole line (without '\n') and checks its own hash; it
// returns the line's binding and hash.
func checkLast(p *lineParser, fl *fields, line []byte) (Binding, [sha256.Size]byte, bool) {
	var head [sha256.Size]byte
	if p.parse(line, fl) != nil {
		return Binding{}, head, false
	}
	h := lineHash(sha256.New(), line, fl, nil)
	if !hexEqual(fl.hash.of(line), h) {
		return Binding{}, head, false
	}
	copy(head[:], h)
	b := Binding{Run: unquote(fl.run.of(line)), Contract: unquote(fl.contract.of(line)),
		Source: Source{Commit: unquote(fl.commit.of(line)), Tree: unquote(fl.tree.of(line))}}
	return b, head, true
}

// continueReader is a reader that continues a chain from the event with
// seq and hash head, at physical line lines, bound to b.
func continueReader(b Binding, wanted bool, lines int, seq uint64, head [sha256.Size]byte) *reader {
	r := newReader(&b)
	r.want = wanted
	r.line, r.n, r.seq, r.head = lines, int(seq), seq, head
	return r
}

// readRest reads the rest of the active file with r (its torn-tail
// semantics included) into l, whose active file is size bytes long; false
// on a refusal (openSlow then says what it is).
func (l *Log) readRest(r *reader, src io.Reader, size int64) bool {
	r.acceptTorn = true
	r.onEvent = func(line []byte, fl *fields) {
		l.events = append(l.events, eventOf(line, fl))
		l.last = append(append(l.last[:0:0], line...), '\n')
	}
	n0 := r.n
	ce, t, err := r.run(src)
	if err != nil || (ce != nil && t == nil) {
		return false
	}
	l.finishState(r, t, size, r.n > n0)
	return true
}

// finishState sets l's chain state from reader r after it read the active
// file (size bytes); read says whether it held any event.
func (l *Log) finishState(r *reader, t *tail, size int64, read bool) {
	l.repair = t
	l.n, l.seq, l.lines, l.asize = r.n, r.seq, r.line, size
	if r.n > 0 {
		l.hd = "sha256:" + hex.EncodeToString(r.head[:])
	}
	if read {
		l.lastFile, l.lastOff = l.path, size-int64(len(l.last))
	}
}

// openSlow opens the log reading its active file whole (never the sealed
// segments but the last one's last line), finishing an interrupted seal.
func openSlow(path string, want *Binding) (*Log, error) {
	ns, err := sealed(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	for i, n := range ns {
		if n != i+1 {
			return nil, &ChainError{Reason: SegmentGap, File: SegmentName(path, i+1), Detail: fmt.Sprintf("sealed segment %s is missing", SegmentName(path, i+1))}
		}
	}
	if afi, err := os.Stat(path); err == nil {
		if _, err := finishSeal(path, len(ns), afi); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open events: %w", err)
	}
	l, err := slowState(f, path, len(ns), want)
	if err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func slowState(f *os.File, path string, nsealed int, want *Binding) (*Log, error) {
	afi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open events: %w", err)
	}
	l := &Log{f: f, path: path, now: time.Now}
	l.nsealed, l.lastFile = nsealed, path
	r, err := l.sealedBase(want)
	if err != nil {
		return nil, err
	}
	start := r.line
	r.acceptTorn = true
	r.onEvent = func(line []byte, fl *fields) {
		l.events = append(l.events, eventOf(line, fl))
		l.last = append(append(l.last[:0:0], line...), '\n')
	}
	n0 := r.n
	ce, t, err := r.run(f)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if ce != nil && t == nil {
		ce.File, ce.Line = filepath.Base(path), ce.Line-start
		ce.Detail = path + ": " + ce.Detail
		return nil, ce
	}
	l.finishState(r, t, afi.Size(), r.n > n0)
	switch {
	case want != nil:
		l.b = *want
	case len(l.events) > 0:
		e := l.events[0]
		l.b = Binding{Run: e.Run, Source: e.Source, Contract: e.Contract}
	case l.nsealed == 0:
		return nil, fmt.Errorf("open %s: %w", path, ErrNoBinding)
	}
	return l, nil
}

// sealedBase returns the reader positioned after the last sealed segment,
// from its last line (and the chain's line count), setting l's base; with
// no sealed segment, a reader at the chain's start.
func (l *Log) sealedBase(want *Binding) (*reader, error) {
	if l.nsealed == 0 {
		return newReader(want), nil
	}
	seg := segPath(l.path, l.nsealed)
	line, off, size, err := lastLine(seg)
	name := filepath.Base(seg)
	if err != nil {
		return nil, &ChainError{Reason: SegmentTorn, File: name, Detail: err.Error()}
	}
	var p lineParser
	var fl fields
	b, head, ok := checkLast(&p, &fl, line[:len(line)-1])
	if !ok {
		return nil, &ChainError{Reason: SegmentTorn, File: name, Detail: "the last line is not a valid event"}
	}
	if want != nil && b != *want {
		return nil, &ChainError{Reason: ForeignBinding, File: name, Detail: fmt.Sprintf("run %q differs from the expected binding", b.Run)}
	}
	lines, err := countLines(l.path, l.nsealed)
	if err != nil {
		return nil, err
	}
	l.b, l.last, l.lastFile, l.lastOff = b, line, seg, off
	l.base, l.baseFile, l.baseEnd = int(fl.seq), seg, size
	l.n, l.seq, l.hd = int(fl.seq), fl.seq, "sha256:"+hex.EncodeToString(head[:])
	return continueReader(b, want != nil, lines, fl.seq, head), nil
}

// lastLine returns the last line of a file that must end in '\n' (with
// it), its offset and the file's size.
func lastLine(path string) ([]byte, int64, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	size := fi.Size()
	var buf []byte
	for chunk := int64(4096); ; chunk *= 4 {
		n := min(size, chunk, MaxLine+2)
		buf = make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil {
			return nil, 0, 0, err
		}
		if n == 0 || buf[n-1] != '\n' {
			return nil, 0, 0, errors.New("the file does not end in a complete line")
		}
		if i := bytes.LastIndexByte(buf[:n-1], '\n'); i >= 0 {
			return buf[i+1:], size - n + int64(i) + 1, size, nil
		}
		if n == size {
			return buf, 0, size, nil
		}
		if n == MaxLine+2 {
			return nil, 0, 0, errors.New("the last line is too long")
		}
	}
}

// countLines counts the physical lines of the first n sealed segments.
func countLines(active string, n int) (int, error) {
	buf := make([]byte, readBuf)
	total := 0
	for i := 1; i <= n; i++ {
		f, err := os.Open(segPath(active, i))
		if err != nil {
			return 0, fmt.Errorf("read events: %w", err)
		}
		for {
			k, err := f.Read(buf)
			total += bytes.Count(buf[:k], lf)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return 0, fmt.Errorf("read events: %w", err)
			}
		}
		f.Close()
	}
	return total, nil
}

// Load reads and verifies the events Open did not read (those of the
// sealed segments and of the active file's part the head index vouched
// for), so that Events holds the whole chain. It checks that they end in
// the event the rest chains to; a refusal is a *ChainError naming the file.
// A refused load also makes the Log refuse appends: its chain is broken.
func (l *Log) Load() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.loadLocked()
	if err != nil && l.err == nil {
		l.err = err
	}
	return err
}

func (l *Log) loadLocked() error {
	if l.base == 0 {
		return nil
	}
	r := newReader(&l.b)
	var evs []Event
	r.onEvent = func(line []byte, fl *fields) { evs = append(evs, eventOf(line, fl)) }
	files, err := chain(l.path)
	if err != nil {
		return fmt.Errorf("load %s: %w", l.path, err)
	}
	if ce := firstSeqs(files); ce != nil {
		return ce
	}
	br := bufio.NewReaderSize(nil, readBuf)
	found := false
	for i, cf := range files {
		if cf.path == l.baseFile {
			cf.limited, cf.limit, found = true, l.baseEnd, true
		}
		if ce, _, err := r.readOne(cf, br, i > 0); err != nil || ce != nil {
			if err != nil {
				return fmt.Errorf("load %s: %w", l.path, err)
			}
			return ce
		}
		if found {
			break
		}
	}
	want := l.hd
	if len(l.events) > 0 && l.events[0].Prev != nil {
		want = *l.events[0].Prev
	}
	if !found || r.n != l.base || "sha256:"+hex.EncodeToString(r.head[:]) != want {
		return &ChainError{Reason: BrokenLink, File: filepath.Base(l.baseFile), Detail: fmt.Sprintf("the chain before the events Open read holds %d events ending in sha256:%x; the rest chains to %d ending in %s", r.n, r.head, l.base, want)}
	}
	l.events = append(evs, l.events...)
	l.base, l.baseFile = 0, ""
	return nil
}
