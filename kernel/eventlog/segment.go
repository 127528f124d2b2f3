package eventlog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Reasons a segmented log is refused (besides the single-file ones).
const (
	// SegmentGap: events are missing at a file boundary (a sealed segment
	// was deleted or truncated at a line boundary), or the numbering of
	// sealed segments has a hole.
	SegmentGap Reason = "segment-gap"
	// SegmentOrder: a file's events start before the previous file's end
	// (sealed segments reordered or duplicated).
	SegmentOrder Reason = "segment-order"
	// SegmentTorn: a sealed segment does not end in a complete, valid
	// event line (a torn or damaged end: only the active file may have one).
	SegmentTorn Reason = "segment-torn"
)

// MaxSegments bounds how many sealed segments a log may have.
const MaxSegments = 99_999_999

// SegmentName is the file name of sealed segment n (n ≥ 1) of the log whose
// active file is events.ndjson: events.00000001.ndjson, and so on. For an
// active file named X.ndjson the segments are X.<8 digits>.ndjson.
func SegmentName(active string, n int) string {
	return fmt.Sprintf("%s.%08d.ndjson", stem(active), n)
}

func stem(active string) string {
	return strings.TrimSuffix(filepath.Base(active), ".ndjson")
}

// segmentNumber parses a sealed segment's name; ok is false for any other
// name (including a number with the wrong width or zero).
func segmentNumber(st, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, st+".")
	if !ok {
		return 0, false
	}
	num, ok := strings.CutSuffix(rest, ".ndjson")
	if !ok || len(num) != 8 {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || num[0] == '+' || num[0] == '-' {
		return 0, false
	}
	return n, true
}

// sealed lists the numbers of the sealed segments beside the active file at
// path, ascending.
func sealed(path string) ([]int, error) {
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("list segments: %w", err)
	}
	st := stem(path)
	var ns []int
	for _, e := range ents {
		if n, ok := segmentNumber(st, e.Name()); ok && e.Type().IsRegular() {
			ns = append(ns, n)
		}
	}
	if len(ns) > MaxSegments {
		return nil, fmt.Errorf("list segments: more than %d", MaxSegments)
	}
	slices.Sort(ns)
	return ns, nil
}

// Files returns every file of the log whose active file is path, in chain
// order: the sealed segments by number, then the active file. It is for
// copiers (archives, bundles, shard directories); it checks nothing (a
// numbering hole is listed as it is: verifiers refuse it). The head index
// (HeadFile) is a cache and not listed: a copy without it reads the same.
// A log with neither an active file nor a sealed segment is an error.
func Files(path string) ([]string, error) {
	ns, err := sealed(path)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ns)+1)
	dir := filepath.Dir(path)
	for _, n := range ns {
		out = append(out, filepath.Join(dir, SegmentName(path, n)))
	}
	switch _, err := os.Stat(path); {
	case err == nil:
		out = append(out, path)
	case errors.Is(err, fs.ErrNotExist) && len(ns) > 0:
	default:
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

// chainFile is one file of a log as readers see it.
type chainFile struct {
	path    string
	sealed  bool
	limited bool  // read only the first limit bytes (Log.Load)
	limit   int64 // when limited
}

// chain returns the files readers read, refusing a hole in the numbering
// of sealed segments. An active file that is the last sealed segment itself
// (a seal interrupted after its link, see Log.seal) or a byte-identical
// copy of it is left out: its events are the segment's.
func chain(path string) ([]chainFile, error) {
	ns, err := sealed(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	var out []chainFile
	for i, n := range ns {
		if n != i+1 {
			missing := SegmentName(path, i+1)
			return nil, &ChainError{Reason: SegmentGap, File: missing, Detail: fmt.Sprintf("sealed segment %s is missing (the next present is %s)", missing, SegmentName(path, n))}
		}
		out = append(out, chainFile{path: filepath.Join(dir, SegmentName(path, n)), sealed: true})
	}
	afi, err := os.Stat(path)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist) && len(out) > 0:
		return out, nil
	default:
		return nil, fmt.Errorf("read events: %w", err)
	}
	if len(out) > 0 && duplicate(out[len(out)-1].path, afi, path) {
		return out, nil
	}
	return append(out, chainFile{path: path}), nil
}

// duplicate reports whether the active file (at path, afi) is the sealed
// segment seg, or holds exactly its bytes.
func duplicate(seg string, afi os.FileInfo, path string) bool {
	sfi, err := os.Stat(seg)
	if err != nil || afi.Size() == 0 {
		return false
	}
	if os.SameFile(sfi, afi) {
		return true
	}
	if sfi.Size() != afi.Size() {
		return false
	}
	a, aerr := fileSum(seg)
	b, berr := fileSum(path)
	return aerr == nil && berr == nil && a == b
}

func fileSum(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// OpenChain returns the bytes of every file of the log at path in chain
// order, concatenated: a valid single-file log (each sealed segment ends
// in '\n' and the next continues the chain; log.recovered line numbers
// count physical lines across the whole chain). Bundle export writes it as
// the one events.ndjson member. A hole in the numbering is refused.
func OpenChain(path string) (io.ReadCloser, error) {
	files, err := chain(path)
	if err != nil {
		return nil, err
	}
	return &chainReader{files: files}, nil
}

// chainReader reads the files of a chain one after the other.
type chainReader struct {
	files []chainFile
	cur   *os.File
}

func (c *chainReader) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			if len(c.files) == 0 {
				return 0, io.EOF
			}
			f, err := os.Open(c.files[0].path)
			if err != nil {
				return 0, fmt.Errorf("read events: %w", err)
			}
			c.cur, c.files = f, c.files[1:]
		}
		n, err := c.cur.Read(p)
		if errors.Is(err, io.EOF) {
			c.cur.Close()
			c.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (c *chainReader) Close() error {
	if c.cur != nil {
		err := c.cur.Close()
		c.cur = nil
		return err
	}
	return nil
}

// readChain verifies every file of the log at path with r, one after the
// other, as one chain. A refusal names the file (ChainError.File, its base
// name) and the line in that file.
func (r *reader) readChain(path string) (*ChainError, *tail, error) {
	files, err := chain(path)
	if err != nil {
		var ce *ChainError
		if errors.As(err, &ce) {
			return ce, nil, nil
		}
		return nil, nil, err
	}
	if ce := firstSeqs(files); ce != nil {
		return ce, nil, nil
	}
	br := bufio.NewReaderSize(nil, readBuf)
	for i, cf := range files {
		ce, t, err := r.readOne(cf, br, i > 0)
		if err != nil || ce != nil {
			return ce, t, err
		}
	}
	return nil, nil, nil
}

// readOne verifies one file of a chain, continuing r's state.
func (r *reader) readOne(cf chainFile, br *bufio.Reader, later bool) (*ChainError, *tail, error) {
	f, err := os.Open(cf.path)
	if err != nil {
		return nil, nil, fmt.Errorf("read events: %w", err)
	}
	defer f.Close()
	start, n0, seq0 := r.line, r.n, r.seq
	var src io.Reader = f
	if cf.limited {
		src = io.LimitReader(f, cf.limit)
	}
	br.Reset(src)
	torn := r.acceptTorn
	r.acceptTorn = torn && !cf.sealed
	ce, t, err := r.runBuffered(br)
	r.acceptTorn = torn
	if err != nil {
		return nil, nil, err
	}
	if ce == nil && cf.sealed && r.n == n0 {
		ce = &ChainError{Reason: SegmentTorn, Line: r.line, Detail: "sealed segment holds no event"}
	}
	if ce == nil {
		return nil, t, nil
	}
	name := filepath.Base(cf.path)
	ce.File, ce.Line = name, ce.Line-start
	switch {
	case cf.sealed && (t != nil || ce.Reason == TornTail):
		ce.Reason, t = SegmentTorn, nil
		ce.Detail = "sealed segment ends in damage: " + ce.Detail
	case later && ce.Line == 1 && ce.Reason == SeqGap:
		ce.Reason = SegmentGap
		ce.Detail = fmt.Sprintf("%s starts after seq %d: %s", name, seq0, ce.Detail)
	case later && ce.Line == 1 && ce.Reason == BrokenLink && strings.HasPrefix(ce.Detail, "prev "):
		ce.Detail = fmt.Sprintf("the first event of %s does not link to the last of the previous file: %s", name, ce.Detail)
	}
	return ce, t, nil
}

// firstSeqs reads the first line of every file and refuses files whose
// first seqs do not ascend (a reorder), before anything is streamed.
// Lines it cannot parse are left to the full read.
func firstSeqs(files []chainFile) *ChainError {
	var p lineParser
	var f fields
	var last uint64
	lastName := ""
	for _, cf := range files {
		line, ok := firstLine(cf.path)
		if !ok || p.parse(line, &f) != nil {
			continue
		}
		name := filepath.Base(cf.path)
		if f.seq <= last {
			return &ChainError{Reason: SegmentOrder, File: name, Line: 1, Detail: fmt.Sprintf("%s starts at seq %d, not after %s (which starts at seq %d)", name, f.seq, lastName, last)}
		}
		last, lastName = f.seq, name
	}
	return nil
}

func firstLine(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := bufio.NewReaderSize(io.LimitReader(f, MaxLine+1), 4096).ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, false // a long first line: the full read checks it
	}
	if err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(b, []byte{'\n'}), true
}

// VerifyPath verifies the log whose active file is path: its sealed
// segments in order, then the active file, as one chain (see Verify).
func VerifyPath(path string, want *Binding) (Summary, error) {
	r := newReader(want)
	ce, _, err := r.readChain(path)
	if err != nil {
		return r.summary(), err
	}
	if ce != nil {
		return r.summary(), ce
	}
	return r.summary(), nil
}

// At is event n of a log as VerifyPathAt saw it: its hash and the time it
// records ("" when the verified chain holds fewer than n events).
type At struct {
	Hash string
	Time string
}

// VerifyPathAt is VerifyPath that also returns the hash and time of event
// n (the n-th, 1-based), for checking a checkpoint taken at length n
// without keeping the events.
func VerifyPathAt(path string, want *Binding, n int) (Summary, At, error) {
	r := newReader(want)
	var at At
	r.onEvent = func(line []byte, f *fields) {
		if r.n == n {
			at = At{Hash: "sha256:" + string(f.hash.of(line)), Time: string(f.time.of(line))}
		}
	}
	ce, _, err := r.readChain(path)
	if err != nil {
		return r.summary(), at, err
	}
	if ce != nil {
		return r.summary(), at, ce
	}
	return r.summary(), at, nil
}
