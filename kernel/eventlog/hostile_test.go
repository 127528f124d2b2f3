package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var testBinding = Binding{
	Run:      "20261129T210000Z-abc123",
	Source:   Source{Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40)},
	Contract: "sha256:" + strings.Repeat("c", 64),
}

// newLog writes a real log of n events to a temp dir and returns its path
// and bytes.
func newLog(t *testing.T, b Binding, n int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := Create(path, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := l.Append("check.finished", map[string]any{"check": fmt.Sprintf("c%d", i), "exit_code": i, "note": "ü \"q\" \n <&>"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw
}

func splitLines(raw []byte) [][]byte {
	ls := bytes.SplitAfter(raw, []byte{'\n'})
	if len(ls[len(ls)-1]) == 0 {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func join(ls [][]byte) []byte { return bytes.Join(ls, nil) }

// wantRefusal verifies raw with both Verify and Read and asserts reason and
// line.
func wantRefusal(t *testing.T, raw []byte, want *Binding, reason Reason, line int) Summary {
	t.Helper()
	s, err := Verify(bytes.NewReader(raw), want)
	var ce *ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("Verify: got %v, want %s at line %d", err, reason, line)
	}
	if ce.Reason != reason || ce.Line != line {
		t.Fatalf("Verify: got %s at line %d (%s), want %s at line %d", ce.Reason, ce.Line, ce.Detail, reason, line)
	}
	evs, err := Read(bytes.NewReader(raw), want)
	var ce2 *ChainError
	if !errors.As(err, &ce2) || *ce2 != *ce {
		t.Fatalf("Read disagrees with Verify: %v vs %v", err, ce)
	}
	if len(evs) != s.Len {
		t.Fatalf("Read returned %d events, Verify verified %d", len(evs), s.Len)
	}
	return s
}

// wantOpenRefused asserts that a writer refuses to open raw as well.
func wantOpenRefused(t *testing.T, raw []byte, reason Reason, line int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.ndjson")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Reason != reason || ce.Line != line {
		if l != nil {
			l.Close()
		}
		t.Fatalf("Open: got %v, want %s at line %d", err, reason, line)
	}
}

func verifyOK(t *testing.T, raw []byte, want *Binding) Summary {
	t.Helper()
	s, err := Verify(bytes.NewReader(raw), want)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return s
}

// line builds a line with full control over its envelope.
func line(b Binding, seq uint64, typ string, data string, prev string) []byte {
	l, _ := buildLine(nil, &b, seq, typ, "2026-11-29T21:00:00.123456789Z", []byte(data), prev)
	return append(l, '\n')
}

func TestFlipEveryByte(t *testing.T) {
	_, raw := newLog(t, testBinding, 3)
	ls := splitLines(raw)
	base := verifyOK(t, raw, nil)
	pos := 0
	for ln, l := range ls {
		for k := range l {
			mut := bytes.Clone(raw)
			mut[pos+k] ^= 0x01
			wantLine := ln + 1
			s, err := Verify(bytes.NewReader(mut), nil)
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("flip line %d byte %d (%q): accepted", wantLine, k, l[k])
			}
			if ce.Line != wantLine {
				t.Fatalf("flip line %d byte %d (%q): refused at line %d (%s)", wantLine, k, l[k], ce.Line, ce)
			}
			switch {
			case k == len(l)-1 && ln == len(ls)-1:
				if ce.Reason != TornTail {
					t.Fatalf("flip of the final newline: %s, want torn-tail", ce)
				}
			case ce.Reason != Malformed && ce.Reason != BrokenLink:
				t.Fatalf("flip line %d byte %d: %s, want malformed or broken-link", wantLine, k, ce)
			}
			if s.Len != ln {
				t.Fatalf("flip line %d: verified prefix %d, want %d", wantLine, s.Len, ln)
			}
			if s.Head == base.Head {
				t.Fatalf("flip line %d: head unchanged", wantLine)
			}
		}
		pos += len(l)
	}
}

func TestFlipContentIsBrokenLink(t *testing.T) {
	_, raw := newLog(t, testBinding, 3)
	// "c1" -> "c0" in line 2's data keeps the line canonical.
	mut := bytes.Replace(raw, []byte(`"check":"c1"`), []byte(`"check":"c0"`), 1)
	wantRefusal(t, mut, nil, BrokenLink, 2)
	// A different (valid hex) own hash.
	ls := splitLines(bytes.Clone(raw))
	i := bytes.Index(ls[1], []byte(`"hash":"sha256:`)) + len(`"hash":"sha256:`)
	if ls[1][i] == '0' {
		ls[1][i] = '1'
	} else {
		ls[1][i] = '0'
	}
	wantRefusal(t, join(ls), nil, BrokenLink, 2)
	wantOpenRefused(t, join(ls), BrokenLink, 2)
	// A correctly hashed line whose prev is not the previous hash.
	ls = splitLines(raw)
	wrong := line(testBinding, 3, "x", `{}`, "sha256:"+strings.Repeat("f", 64))
	wantRefusal(t, join([][]byte{ls[0], ls[1], wrong}), nil, BrokenLink, 3)
	// prev pointing at line 1 instead of line 2.
	first := verifyOK(t, ls[0], nil).Head
	wantRefusal(t, join([][]byte{ls[0], ls[1], line(testBinding, 3, "x", `{}`, first)}), nil, BrokenLink, 3)
}

func TestDeleteMiddleLine(t *testing.T) {
	_, raw := newLog(t, testBinding, 5)
	ls := splitLines(raw)
	mut := join(slices.Delete(ls, 2, 3))
	wantRefusal(t, mut, nil, SeqGap, 3)
	wantOpenRefused(t, mut, SeqGap, 3)
}

func TestDeleteLastLineIsShorterValidLog(t *testing.T) {
	_, raw := newLog(t, testBinding, 5)
	full := verifyOK(t, raw, &testBinding)
	ls := splitLines(raw)
	short := verifyOK(t, join(ls[:4]), &testBinding)
	if short.Len != 4 || full.Len != 5 || short.Head == full.Head {
		t.Fatalf("deleting the last line must change Len/Head: full %+v short %+v", full, short)
	}
}

func TestReorderTwoLines(t *testing.T) {
	_, raw := newLog(t, testBinding, 5)
	ls := splitLines(raw)
	ls[1], ls[2] = ls[2], ls[1]
	wantRefusal(t, join(ls), nil, SeqGap, 2)
	wantOpenRefused(t, join(ls), SeqGap, 2)
}

func TestDuplicateLine(t *testing.T) {
	_, raw := newLog(t, testBinding, 5)
	ls := splitLines(raw)
	ls = slices.Insert(ls, 2, ls[1])
	wantRefusal(t, join(ls), nil, SeqGap, 3)
	// Duplicating the last line is the same refusal at the end.
	_, raw = newLog(t, testBinding, 3)
	wantRefusal(t, append(bytes.Clone(raw), splitLines(raw)[2]...), nil, SeqGap, 4)
	wantOpenRefused(t, append(bytes.Clone(raw), splitLines(raw)[2]...), SeqGap, 4)
}

func TestLineFromAnotherRun(t *testing.T) {
	_, raw := newLog(t, testBinding, 5)
	other := testBinding
	other.Run = "20261129T210001Z-other"
	_, oraw := newLog(t, other, 6)
	// Its seq 6 would fit; its binding does not.
	mut := append(bytes.Clone(raw), splitLines(oraw)[5]...)
	wantRefusal(t, mut, nil, ForeignBinding, 6)
	wantRefusal(t, mut, &testBinding, ForeignBinding, 6)
	wantOpenRefused(t, mut, ForeignBinding, 6)
	// A line from another run chained onto this one (same seq and prev) is
	// still foreign.
	head := verifyOK(t, raw, nil).Head
	forged := line(other, 6, "check.finished", `{}`, head)
	wantRefusal(t, append(bytes.Clone(raw), forged...), nil, ForeignBinding, 6)
}

func TestRecomputedChainOtherContract(t *testing.T) {
	other := testBinding
	other.Contract = "sha256:" + strings.Repeat("d", 64)
	_, raw := newLog(t, other, 4)
	verifyOK(t, raw, nil) // self-consistent: only the expected binding catches it
	wantRefusal(t, raw, &testBinding, ForeignBinding, 1)
	src := testBinding
	src.Source.Tree = strings.Repeat("e", 40)
	_, raw = newLog(t, src, 2)
	wantRefusal(t, raw, &testBinding, ForeignBinding, 1)
	// Binding taken from line 1 when none is given.
	ls := splitLines(raw)
	_, raw2 := newLog(t, testBinding, 2)
	mixed := join([][]byte{ls[0], splitLines(raw2)[1]})
	wantRefusal(t, mixed, nil, ForeignBinding, 2)
}

func TestUnchainedAfterChained(t *testing.T) {
	_, raw := newLog(t, testBinding, 3)
	restart := line(testBinding, 1, "run.planned", `{}`, "")
	wantRefusal(t, append(bytes.Clone(raw), restart...), nil, UnchainedAfterChained, 4)
	wantOpenRefused(t, append(bytes.Clone(raw), restart...), UnchainedAfterChained, 4)
	cont := line(testBinding, 4, "run.planned", `{}`, "")
	wantRefusal(t, append(bytes.Clone(raw), cont...), nil, UnchainedAfterChained, 4)
}

func TestFirstLine(t *testing.T) {
	head := "sha256:" + strings.Repeat("0", 64)
	wantRefusal(t, line(testBinding, 2, "x", `{}`, head), nil, SeqGap, 1)
	wantRefusal(t, line(testBinding, 2, "x", `{}`, ""), nil, SeqGap, 1)
	wantRefusal(t, line(testBinding, 1, "x", `{}`, head), nil, Malformed, 1)
}

func TestTornTailAndRecovery(t *testing.T) {
	path, raw := newLog(t, testBinding, 5)
	ls := splitLines(raw)
	frag := ls[4][:len(ls[4])/2]
	torn := append(join(ls[:4]), frag...)
	if err := os.WriteFile(path, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	s := wantRefusal(t, torn, nil, TornTail, 5)
	if s.Len != 4 {
		t.Fatalf("verified prefix %d, want 4", s.Len)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatalf("Open must tolerate a torn tail: %v", err)
	}
	if !l.Damaged() || l.Len() != 4 {
		t.Fatalf("Damaged %v Len %d", l.Damaged(), l.Len())
	}
	ev, err := l.Append("state.changed", map[string]string{"to": "VERIFYING"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 6 || l.Len() != 6 || l.Damaged() {
		t.Fatalf("after repair: seq %d len %d damaged %v", ev.Seq, l.Len(), l.Damaged())
	}
	l.Close()
	evs, err := ReadFile(path, &testBinding)
	if err != nil {
		t.Fatalf("repaired log refused: %v", err)
	}
	rec := evs[4]
	sum := sha256.Sum256(frag)
	wantData := fmt.Sprintf(`{"bytes":%d,"line":5,"sha256":"%s"}`, len(frag), hex.EncodeToString(sum[:]))
	if rec.Type != TypeRecovered || string(rec.Data) != wantData || rec.Seq != 5 || *rec.Prev != evs[3].Hash {
		t.Fatalf("recovery event %+v data %s, want %s", rec, rec.Data, wantData)
	}
	got, _ := os.ReadFile(path)
	s = verifyOK(t, got, nil)
	if !slices.Equal(s.Recovered, []int{5}) || s.Len != 6 {
		t.Fatalf("summary %+v, want Recovered [5], Len 6", s)
	}
	// The fragment is its own line 5; the recovery is line 6.
	if gl := splitLines(got); !bytes.Equal(gl[4], append(bytes.Clone(frag), '\n')) {
		t.Fatalf("line 5 is %q, want the fragment", gl[4])
	}
	// Reopen and keep appending.
	l, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("x", nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
}

func TestTornTailWholeLine(t *testing.T) {
	path, raw := newLog(t, testBinding, 3)
	torn := raw[:len(raw)-1] // only the final '\n' is lost
	os.WriteFile(path, torn, 0o644)
	wantRefusal(t, torn, nil, TornTail, 3)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("the whole final event stands: Len %d", l.Len())
	}
	if _, err := l.Append("x", nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	got, _ := os.ReadFile(path)
	if s := verifyOK(t, got, nil); s.Len != 4 || len(s.Recovered) != 0 {
		t.Fatalf("summary %+v", s)
	}
}

// A crash during the repair itself leaves a malformed line, or a malformed
// line and a new fragment; Open still repairs it.
func TestCrashDuringRecovery(t *testing.T) {
	for _, tc := range []struct {
		name   string
		suffix string
		reason Reason
	}{
		{"newline only", "\n", Malformed},
		{"partial recovery line", "\n{\"contract\":\"sha2", Malformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, raw := newLog(t, testBinding, 3)
			frag := `{"contract":"sha256:cc`
			mut := append(bytes.Clone(raw), frag+tc.suffix...)
			os.WriteFile(path, mut, 0o644)
			wantRefusal(t, mut, nil, tc.reason, 4)
			l, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append("x", nil); err != nil {
				t.Fatal(err)
			}
			l.Close()
			got, _ := os.ReadFile(path)
			if s := verifyOK(t, got, nil); !slices.Equal(s.Recovered, []int{4}) || s.Len != 5 {
				t.Fatalf("summary %+v", s)
			}
		})
	}
}

func TestMalformedMiddleLine(t *testing.T) {
	path, raw := newLog(t, testBinding, 5)
	ls := splitLines(raw)
	mut := join(slices.Insert(ls, 2, []byte("garbage\n")))
	wantRefusal(t, mut, nil, Malformed, 3)
	os.WriteFile(path, mut, 0o644)
	var ce *ChainError
	if _, err := Open(path); !errors.As(err, &ce) || ce.Reason != Malformed || ce.Line != 3 {
		t.Fatalf("Open must refuse a malformed middle line: %v", err)
	}
	// A recovery event with the wrong digest does not excuse it.
	_, raw = newLog(t, testBinding, 2)
	head := verifyOK(t, raw, nil).Head
	bad := line(testBinding, 3, TypeRecovered, fmt.Sprintf(`{"bytes":7,"line":3,"sha256":"%s"}`, strings.Repeat("0", 64)), head)
	mut = join([][]byte{raw, []byte("garbage\n"), bad})
	wantRefusal(t, mut, nil, Malformed, 3)
	// The right one does.
	sum := sha256.Sum256([]byte("garbage"))
	good := line(testBinding, 3, TypeRecovered, fmt.Sprintf(`{"bytes":7,"line":3,"sha256":"%x"}`, sum), head)
	s := verifyOK(t, join([][]byte{raw, []byte("garbage\n"), good}), nil)
	if !slices.Equal(s.Recovered, []int{3}) {
		t.Fatalf("Recovered %v", s.Recovered)
	}
	// Naming the wrong line does not.
	wrongLine := line(testBinding, 3, TypeRecovered, fmt.Sprintf(`{"bytes":7,"line":2,"sha256":"%x"}`, sum), head)
	wantRefusal(t, join([][]byte{raw, []byte("garbage\n"), wrongLine}), nil, Malformed, 3)
	// A malformed last line that was never torn: Verify refuses it.
	wantRefusal(t, append(bytes.Clone(raw), "garbage\n"...), nil, Malformed, 3)
}

func TestOversizedLine(t *testing.T) {
	path, raw := newLog(t, testBinding, 3)
	ls := splitLines(raw)
	big := append(bytes.Repeat([]byte("x"), MaxLine+1), '\n')
	wantRefusal(t, join(slices.Insert(ls, 1, big)), nil, Malformed, 2)
	// A valid-looking event just over the limit.
	huge := line(testBinding, 4, "x", `{"a":"`+strings.Repeat("y", MaxLine)+`"}`, verifyOK(t, raw, nil).Head)
	wantRefusal(t, append(bytes.Clone(raw), huge...), nil, Malformed, 4)
	// Append refuses to write it.
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("x", map[string]string{"a": strings.Repeat("y", MaxLine)}); err == nil {
		t.Fatal("Append wrote an oversized line")
	}
	l.Close()
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, raw) {
		t.Fatal("a refused Append changed the file")
	}
}

func TestNonCanonicalRefused(t *testing.T) {
	_, raw := newLog(t, testBinding, 2)
	head := verifyOK(t, splitLines(raw)[0], nil).Head
	base := string(line(testBinding, 2, "x", `{"a":1,"b":"s"}`, head))
	for name, mut := range map[string]string{
		"space after colon":  strings.Replace(base, `"a":1`, `"a": 1`, 1),
		"space after brace":  strings.Replace(base, `{"contract"`, `{ "contract"`, 1),
		"unsorted data keys": strings.Replace(base, `{"a":1,"b":"s"}`, `{"b":"s","a":1}`, 1),
		"unsorted envelope":  strings.Replace(base, `{"contract":`, `{"v":1,"contract":`, 1),
		"number 1.0":         strings.Replace(base, `"a":1`, `"a":1.0`, 1),
		"number 1e0":         strings.Replace(base, `"a":1`, `"a":1e0`, 1),
		"number -0":          strings.Replace(base, `"a":1`, `"a":-0`, 1),
		"escaped slash":      strings.Replace(base, `"b":"s"`, `"b":"\/"`, 1),
		"needless unicode":   strings.Replace(base, `"b":"s"`, `"b":"\u0073"`, 1),
		"uppercase escape":   strings.Replace(base, `"b":"s"`, `"b":"\u001F"`, 1),
		"long escape for nl": strings.Replace(base, `"b":"s"`, `"b":"\u000a"`, 1),
		"duplicate key":      strings.Replace(base, `{"a":1,"b":"s"}`, `{"a":1,"a":1}`, 1),
		"crlf":               strings.Replace(base, "}\n", "}\r\n", 1),
		"v 2":                strings.Replace(base, `"v":1}`, `"v":2}`, 1),
		"v 1.0":              strings.Replace(base, `"v":1}`, `"v":1.0}`, 1),
		"extra member":       strings.Replace(base, `"type":"x"`, `"type":"x","u":0`, 1),
		"missing type":       strings.Replace(base, `,"type":"x"`, ``, 1),
		"time not UTC":       strings.Replace(base, `00.123456789Z`, `00.123456789+01:00`, 1),
		"time trailing zero": strings.Replace(base, `00.123456789Z`, `00.1234567890Z`, 1),
		"time bad day":       strings.Replace(base, `2026-11-29`, `2026-02-30`, 1),
		"seq leading zero":   strings.Replace(base, `"seq":2`, `"seq":02`, 1),
		"data not object":    strings.Replace(base, `{"a":1,"b":"s"}`, `[1]`, 1),
		"invalid utf8":       strings.Replace(base, `"b":"s"`, "\"b\":\"\xff\"", 1),
		"trailing":           strings.Replace(base, "}\n", "} \n", 1),
	} {
		if mut == base {
			t.Fatalf("%s: mutation did not apply", name)
		}
		wantRefusal(t, append(bytes.Clone(splitLines(raw)[0]), mut...), nil, Malformed, 2)
	}
	// The unmodified base line is accepted.
	verifyOK(t, append(bytes.Clone(splitLines(raw)[0]), base...), nil)
}

func TestEmptyAndUnbound(t *testing.T) {
	if s := verifyOK(t, nil, nil); s.Len != 0 || s.Head != "" {
		t.Fatalf("%+v", s)
	}
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := Create(path, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := Create(path, testBinding); err == nil {
		t.Fatal("Create overwrote an existing log")
	}
	if _, err := Open(path); !errors.Is(err, ErrNoBinding) {
		t.Fatalf("Open of an empty log: %v", err)
	}
	// Crash during the very first append: a fragment only.
	os.WriteFile(path, []byte(`{"contract":"sha2`), 0o644)
	wantRefusal(t, []byte(`{"contract":"sha2`), nil, TornTail, 1)
	if _, err := Open(path); !errors.Is(err, ErrNoBinding) {
		t.Fatalf("Open of a torn first line: %v", err)
	}
	l, err = OpenBound(path, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("run.planned", nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	evs, err := ReadFile(path, &testBinding)
	if err != nil || len(evs) != 2 || evs[0].Type != TypeRecovered || evs[0].Prev != nil {
		t.Fatalf("%v %+v", err, evs)
	}
}

func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := Create(path, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if _, err := l.Append("check.finished", map[string]int{"g": g, "i": i}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	l.Close()
	evs, err := ReadFile(path, &testBinding)
	if err != nil || len(evs) != 200 {
		t.Fatalf("%v, %d events", err, len(evs))
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func TestAppendRefusesBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := Create(path, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for name, call := range map[string]func() error{
		"empty type":  func() error { _, err := l.Append("", nil); return err },
		"space type":  func() error { _, err := l.Append("a b", nil); return err },
		"array data":  func() error { _, err := l.Append("x", []int{1}); return err },
		"string data": func() error { _, err := l.Append("x", "s"); return err },
		"bad raw":     func() error { _, err := l.Append("x", json.RawMessage(`{`)); return err },
	} {
		if call() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if l.Len() != 0 {
		t.Fatalf("refused appends left %d events", l.Len())
	}
	if _, err := Create(filepath.Join(t.TempDir(), "e"), Binding{Contract: "x"}); err == nil {
		t.Fatal("Create accepted an empty run")
	}
}

func TestRoundTripAndHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := Create(path, testBinding)
	if err != nil {
		t.Fatal(err)
	}
	datas := []any{
		nil,
		map[string]any{"f": 1.5, "big": 1e21, "small": 1e-7, "neg": -3, "u": "\u2028\U0001F600\x01\x7f", "nested": []any{map[string]any{"é": true, "e": nil}}},
		json.RawMessage(`{ "z" : [1 , 2.50], "a": "\/x" }`),
	}
	for _, d := range datas {
		if _, err := l.Append("tool.Call_x-1", d); err != nil {
			t.Fatal(err)
		}
	}
	mem := l.Events()
	l.Close()
	evs, err := ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(mem) {
		t.Fatalf("%d vs %d", len(evs), len(mem))
	}
	raw, _ := os.ReadFile(path)
	for i, e := range evs {
		a, _ := json.Marshal(e)
		b, _ := json.Marshal(mem[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d: read %s, appended %s", i, a, b)
		}
		h, err := Hash(e)
		if err != nil || h != e.Hash {
			t.Fatalf("event %d: Hash %s %v, line says %s", i, h, err, e.Hash)
		}
		// The line is exactly the canonical JSON of the event.
		c, err := canonMarshal(e)
		if err != nil || !bytes.Equal(append(c, '\n'), splitLines(raw)[i]) {
			t.Fatalf("event %d: line is not its canonical form:\n%s\n%s", i, splitLines(raw)[i], c)
		}
	}
	if string(evs[2].Data) != `{"a":"/x","z":[1,2.5]}` {
		t.Fatalf("raw data not canonicalised: %s", evs[2].Data)
	}
}

func TestLineLengthBoundary(t *testing.T) {
	_, raw := newLog(t, testBinding, 1)
	head := verifyOK(t, raw, nil).Head
	mk := func(n int) []byte {
		l := line(testBinding, 2, "x", `{"a":"`+strings.Repeat("y", n)+`"}`, head)
		return l
	}
	probe := len(mk(0)) - 1
	exact := mk(MaxLine - probe)
	if len(exact) != MaxLine+1 {
		t.Fatalf("construction: %d", len(exact))
	}
	s := verifyOK(t, append(bytes.Clone(raw), exact...), nil)
	if s.Len != 2 {
		t.Fatalf("a line of exactly MaxLine bytes: %+v", s)
	}
	evs, err := Read(bytes.NewReader(append(bytes.Clone(raw), exact...)), nil)
	if err != nil || len(evs[1].Data) != MaxLine-probe+len(`{"a":""}`) {
		t.Fatalf("long line read back: %v", err)
	}
	wantRefusal(t, append(bytes.Clone(raw), mk(MaxLine-probe+1)...), nil, Malformed, 2)
	// Followed by more lines, the refusal still names line 2.
	wantRefusal(t, append(append(bytes.Clone(raw), mk(MaxLine-probe+1)...), raw...), nil, Malformed, 2)
}
