package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// segLog writes a real log of n events with PROOFGATE_SEGMENT_SIZE=size and
// returns its active path; the caller's test keeps the variable set.
func segLog(t *testing.T, b Binding, size string, n int) string {
	t.Helper()
	t.Setenv(SegmentSizeEnv, size)
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := Create(path, b)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 0, n)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func appendN(t *testing.T, l *Log, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := l.Append("check.finished", map[string]any{"check": fmt.Sprintf("c%d", i), "exit_code": i, "note": "segment \"padding\" ü"}); err != nil {
			t.Fatal(err)
		}
	}
}

func chainBytes(t *testing.T, path string) []byte {
	t.Helper()
	rc, err := OpenChain(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSegmentsReadBackWhole(t *testing.T) {
	path := segLog(t, testBinding, "2KiB", 120)
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 || files[len(files)-1] != path || filepath.Base(files[0]) != "events.00000001.ndjson" {
		t.Fatalf("files %v", files)
	}
	var cat []byte
	for i, f := range files {
		b, _ := os.ReadFile(f)
		if i < len(files)-1 && (len(b) < 2048 || len(b) > 2048+400) {
			t.Fatalf("%s is %d bytes, want sealed just past 2 KiB", f, len(b))
		}
		cat = append(cat, b...)
	}
	if !bytes.Equal(chainBytes(t, path), cat) {
		t.Fatal("OpenChain is not the concatenation of Files")
	}
	s := verifyOK(t, cat, &testBinding) // one valid single-file log
	ps, err := VerifyPath(path, &testBinding)
	if err != nil || ps.Len != 120 || ps.Head != s.Head {
		t.Fatalf("VerifyPath %+v %v, stream %+v", ps, err, s)
	}
	evs, err := ReadFile(path, nil)
	if err != nil || len(evs) != 120 || evs[119].Hash != s.Head {
		t.Fatalf("ReadFile: %d events, %v", len(evs), err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 120 || l.Head() != s.Head {
		t.Fatalf("Open: len %d head %s", l.Len(), l.Head())
	}
	appendN(t, l, 120, 1)
	all := l.Events()
	if len(all) != 121 || all[0].Seq != 1 || all[120].Seq != 121 || *all[120].Prev != s.Head {
		t.Fatalf("Events after reopen: %d", len(all))
	}
	l.Close()
	if ps, err := VerifyPath(path, &testBinding); err != nil || ps.Len != 121 {
		t.Fatalf("after reopen: %+v %v", ps, err)
	}
}

// The first event of each new active file links to the last of the sealed
// one: the boundary is an ordinary link in the chain.
func TestSegmentBoundaryLinks(t *testing.T) {
	path := segLog(t, testBinding, "1KiB", 40)
	files, _ := Files(path)
	var lastHash string
	var lastSeq uint64
	var p lineParser
	var f fields
	for _, name := range files[:len(files)-1] {
		ls := lines(t, name)
		first, last := ls[0], ls[len(ls)-1]
		if _, _, ok := checkLast(&p, &f, first[:len(first)-1]); !ok {
			t.Fatalf("%s line 1 invalid", name)
		}
		prev, seq := string(f.prev.of(first)), f.seq
		if lastHash != "" && (prev != lastHash || seq != lastSeq+1) {
			t.Fatalf("%s does not continue the chain: prev %s seq %d", name, prev, seq)
		}
		if lastHash == "" && (!f.prevNull || seq != 1) {
			t.Fatal("segment 1 does not start the chain")
		}
		_, h, _ := checkLast(&p, &f, last[:len(last)-1])
		lastHash, lastSeq = fmt.Sprintf("%x", h), f.seq
	}
}

func TestSegmentSizeEnv(t *testing.T) {
	for v, want := range map[string]int64{"4KiB": 4096, "10MiB": 10 << 20, "65536": 65536, "1GiB": 1 << 30} {
		if n, err := ParseSize(v); err != nil || n != want {
			t.Errorf("%s: %d %v", v, n, err)
		}
	}
	for _, v := range []string{"0", "-1", "4kb", "KiB", "4 KiB", "1.5MiB", "99999999999999", "2000GiB", "0x10"} {
		if _, err := ParseSize(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
	t.Setenv(SegmentSizeEnv, "4kb")
	dir := t.TempDir()
	if _, err := Create(filepath.Join(dir, "events.ndjson"), testBinding); err == nil || !bytes.Contains([]byte(err.Error()), []byte(SegmentSizeEnv)) {
		t.Fatalf("bad size: %v", err)
	}
}

// expectChain asserts VerifyPath and ReadFile refuse with reason in file
// at line (line 0: any).
func expectChain(t *testing.T, path string, reason Reason, file string, line int) {
	t.Helper()
	_, err := VerifyPath(path, nil)
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Reason != reason || ce.File != file || (line != 0 && ce.Line != line) {
		t.Fatalf("VerifyPath: %v, want %s in %s line %d", err, reason, file, line)
	}
	_, err2 := ReadFile(path, nil)
	if !errors.As(err2, &ce) || ce.Reason != reason || ce.File != file {
		t.Fatalf("ReadFile: %v, want %s", err2, reason)
	}
	l, err := Open(path)
	if err == nil {
		if lerr := l.Load(); !errors.As(lerr, &ce) {
			t.Fatalf("Open then Load accepted a log VerifyPath refuses (%v)", lerr)
		}
		l.Close()
	}
}

func seg(path string, n int) string { return segPath(path, n) }

func lines(t *testing.T, path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte{'\n'})[:bytes.Count(b, []byte{'\n'})]
}

func TestSegmentHostile(t *testing.T) {
	cases := map[string]func(t *testing.T, path string) (Reason, string, int){
		"delete a middle segment": func(t *testing.T, path string) (Reason, string, int) {
			os.Remove(seg(path, 2))
			return SegmentGap, "events.00000002.ndjson", 0
		},
		"delete the last sealed segment": func(t *testing.T, path string) (Reason, string, int) {
			if fi, _ := os.Stat(path); fi.Size() == 0 { // just sealed: give the active file an event
				l, _ := Open(path)
				appendN(t, l, l.Len(), 1)
				l.Close()
			}
			ns, _ := sealed(path)
			os.Remove(seg(path, len(ns)))
			return SegmentGap, "events.ndjson", 1
		},
		"swap two segments": func(t *testing.T, path string) (Reason, string, int) {
			a, b := seg(path, 1), seg(path, 2)
			os.Rename(a, a+".x")
			os.Rename(b, a)
			os.Rename(a+".x", b)
			return SegmentOrder, "events.00000002.ndjson", 1
		},
		"truncate a segment at a line": func(t *testing.T, path string) (Reason, string, int) {
			ls := lines(t, seg(path, 2))
			os.WriteFile(seg(path, 2), bytes.Join(ls[:len(ls)-1], nil), 0o644)
			return SegmentGap, "events.00000003.ndjson", 1
		},
		"truncate a segment mid-line (torn end)": func(t *testing.T, path string) (Reason, string, int) {
			b, _ := os.ReadFile(seg(path, 2))
			os.WriteFile(seg(path, 2), b[:len(b)-30], 0o644)
			return SegmentTorn, "events.00000002.ndjson", len(lines(t, seg(path, 2))) + 1
		},
		"torn line appended to a sealed segment": func(t *testing.T, path string) (Reason, string, int) {
			n := len(lines(t, seg(path, 1)))
			f, _ := os.OpenFile(seg(path, 1), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"contract":"sha256:`)
			f.Close()
			return SegmentTorn, "events.00000001.ndjson", n + 1
		},
		"edit a byte of a segment": func(t *testing.T, path string) (Reason, string, int) {
			b, _ := os.ReadFile(seg(path, 3))
			i := bytes.Index(b, []byte(`"exit_code":`)) + len(`"exit_code":`)
			b[i] = flip(b[i])
			os.WriteFile(seg(path, 3), b, 0o644)
			return BrokenLink, "events.00000003.ndjson", 1
		},
		"empty sealed segment": func(t *testing.T, path string) (Reason, string, int) {
			os.WriteFile(seg(path, 2), nil, 0o644)
			return SegmentTorn, "events.00000002.ndjson", 0
		},
		"substitute a segment from another run": func(t *testing.T, path string) (Reason, string, int) {
			other := testBinding
			other.Run = "20261129T210000Z-other1"
			op := segLog(t, other, "1KiB", 60)
			b, _ := os.ReadFile(seg(op, 2))
			os.WriteFile(seg(path, 2), b, 0o644)
			return ForeignBinding, "events.00000002.ndjson", 1
		},
		"substitute a segment from a fork of the same run": func(t *testing.T, path string) (Reason, string, int) {
			// the same run, seqs and event count, other content: a valid
			// chain of its own that the next segment does not link to
			var fork []byte
			prev := ""
			for i := range lines(t, seg(path, 1)) {
				line, h := buildLine(nil, &testBinding, uint64(i+1), "check.finished", formatTime(time.Now()), []byte(fmt.Sprintf(`{"fork":%d}`, i)), prev)
				fork, prev = append(append(fork, line...), '\n'), h
			}
			os.WriteFile(seg(path, 1), fork, 0o644)
			return BrokenLink, "events.00000002.ndjson", 1
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			path := segLog(t, testBinding, "1KiB", 60)
			if ns, _ := sealed(path); len(ns) < 4 {
				t.Fatalf("only %d segments", len(ns))
			}
			reason, file, line := tamper(t, path)
			expectChain(t, path, reason, file, line)
		})
	}
}

// Open's hot path reads no sealed segment: an edit inside one is not seen
// by it (the index vouches for what the writer verified), and every
// verifying reader refuses it.
func TestOpenHotPathTrustsIndexVerifyDoesNot(t *testing.T) {
	path := segLog(t, testBinding, "1KiB", 60)
	b, _ := os.ReadFile(seg(path, 1))
	i := bytes.Index(b, []byte(`"exit_code":`)) + len(`"exit_code":`)
	b[i] = flip(b[i])
	os.WriteFile(seg(path, 1), b, 0o644)
	l, err := Open(path)
	if err != nil {
		t.Fatalf("hot path: %v", err)
	}
	if l.Len() != 60 {
		t.Fatalf("len %d", l.Len())
	}
	var ce *ChainError
	if err := l.Load(); !errors.As(err, &ce) || ce.File != "events.00000001.ndjson" {
		t.Fatalf("Load: %v", err)
	}
	if _, err := l.Append("x", nil); err == nil {
		t.Fatal("append after a refused load")
	}
	l.Close()
	expectChain(t, path, BrokenLink, "events.00000001.ndjson", 1)
}

// A head index that does not agree with the files is ignored: Open reads
// the active file whole and the log is the same.
func TestHeadIndexStaleOrForged(t *testing.T) {
	path := segLog(t, testBinding, "1KiB", 50)
	want, _ := VerifyPath(path, nil)
	ix, _ := os.ReadFile(headPath(path))
	forged := []string{
		"", "{", string(bytes.Replace(ix, []byte(`"seq":`), []byte(`"seq":1`), 1)),
		string(bytes.Replace(ix, []byte(`"segments":`), []byte(`"segments":1`), 1)),
		string(bytes.Replace(ix, []byte(`"offset":`), []byte(`"offset":1`), 1)),
	}
	for _, f := range forged {
		os.WriteFile(headPath(path), []byte(f), 0o644)
		l, err := Open(path)
		if err != nil {
			t.Fatalf("index %q: %v", f, err)
		}
		if l.Len() != want.Len || l.Head() != want.Head {
			t.Fatalf("index %q: len %d head %s", f, l.Len(), l.Head())
		}
		if err := l.Load(); err != nil || len(l.Events()) != want.Len {
			t.Fatalf("index %q: load %v", f, err)
		}
		l.Close()
	}
	os.Remove(headPath(path))
	l, err := Open(path)
	if err != nil || l.Len() != want.Len {
		t.Fatalf("no index: %v", err)
	}
	appendN(t, l, 50, 30)
	l.Close()
	if s, err := VerifyPath(path, &testBinding); err != nil || s.Len != 80 {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestFilesSingleFile(t *testing.T) {
	path, _ := newLog(t, testBinding, 3)
	files, err := Files(path)
	if err != nil || !slices.Equal(files, []string{path}) {
		t.Fatalf("%v %v", files, err)
	}
	if _, err := Files(filepath.Join(t.TempDir(), "events.ndjson")); err == nil {
		t.Fatal("Files of nothing")
	}
}

// Suspend and Resume across seals: a seal by another writer while
// suspended is ErrChanged (the caller reopens); a seal by the Log itself
// before it suspended resumes cleanly on the fresh active file.
func TestResumeAcrossSeals(t *testing.T) {
	path := segLog(t, testBinding, "1KiB", 3)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Suspend(); err != nil {
		t.Fatal(err)
	}
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before := other.nsealed
	appendN(t, other, 3, 12)
	if other.nsealed == before {
		t.Fatal("the other writer sealed nothing")
	}
	other.Close()
	if _, err := l.Resume(); !errors.Is(err, ErrChanged) {
		t.Fatalf("resume after a foreign seal: %v", err)
	}

	l, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for n := l.nsealed; l.nsealed == n; {
		appendN(t, l, l.Len(), 1)
	}
	if err := l.Suspend(); err != nil {
		t.Fatal(err)
	}
	added, err := l.Resume()
	if err != nil || len(added) != 0 {
		t.Fatalf("resume after its own seal: %v %v", added, err)
	}
	appendN(t, l, l.Len(), 2)
	n := l.Len()
	l.Close()
	if s, err := VerifyPath(path, &testBinding); err != nil || s.Len != n {
		t.Fatalf("%+v %v", s, err)
	}
}

// OpenBound refuses a segmented log of another binding, whether the
// active file holds events or is empty right after a seal.
func TestOpenBoundSegments(t *testing.T) {
	path := segLog(t, testBinding, "1KiB", 30)
	other := testBinding
	other.Run = "20261129T210000Z-zzzzzz"
	var ce *ChainError
	if _, err := OpenBound(path, other); !errors.As(err, &ce) || ce.Reason != ForeignBinding {
		t.Fatalf("OpenBound: %v", err)
	}
	os.WriteFile(path, nil, 0o644) // as right after a seal
	os.Remove(headPath(path))
	if _, err := OpenBound(path, other); !errors.As(err, &ce) || ce.Reason != ForeignBinding {
		t.Fatalf("OpenBound on an empty active file: %v", err)
	}
	l, err := OpenBound(path, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 0, 1)
	l.Close()
	if _, err := VerifyPath(path, &testBinding); err != nil {
		t.Fatal(err)
	}
}

// flip returns another digit than d.
func flip(d byte) byte {
	if d == '7' {
		return '8'
	}
	return '7'
}
