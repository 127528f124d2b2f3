package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/proofgate/proofgate/internal/canon"
)

func canonMarshal(e Event) ([]byte, error) { return canon.Marshal(e) }

// jcsCanonical is the reference: b is canonical iff jcs maps it to itself.
func jcsCanonical(b []byte) bool {
	out, err := jcs.Transform(b)
	return err == nil && bytes.Equal(out, b)
}

var runes = []rune{'a', 'z', 'A', '0', ' ', '"', '\\', '/', '<', '&', '\x00', '\x01', '\b', '\t', '\n', '\f', '\r', '\x1f', '\x7f', 'é', 'ü', '\u2028', '\ud7ff', '\ue000', '\uffff', '\U00010000', '\U0001F600', '\U0010FFFF'}

func randString(r *rand.Rand) string {
	var sb strings.Builder
	for n := r.IntN(6); n > 0; n-- {
		sb.WriteRune(runes[r.IntN(len(runes))])
	}
	return sb.String()
}

func randNumber(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return float64(r.IntN(2000) - 1000)
	case 1:
		return float64(r.Int64N(1<<53)) * float64(1-2*r.IntN(2))
	case 2:
		return r.Float64() * math.Pow(10, float64(r.IntN(60)-30))
	case 3:
		for {
			f := math.Float64frombits(r.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	case 4:
		return []float64{0, 1e21, 1e-6, 1e-7, 9.999999999999999e20, 5e-324, math.MaxFloat64, 0.1, 1.5}[r.IntN(9)]
	}
	return -r.Float64()
}

func randValue(r *rand.Rand, depth int) any {
	k := r.IntN(7)
	if depth > 3 && k >= 5 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2, 3:
		return randNumber(r)
	case 4:
		return randString(r)
	case 5:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randValue(r, depth+1)
		}
		return a
	}
	m := map[string]any{}
	for n := r.IntN(5); n > 0; n-- {
		m[randString(r)] = randValue(r, depth+1)
	}
	return m
}

// TestFastPathAgreesWithJCS builds random events and checks that the line
// the writer builds is jcs-canonical, that the streaming hash equals the
// jcs-based hash and Hash, and that the validator accepts exactly what jcs
// leaves unchanged on non-canonical renderings of the same data.
func TestFastPathAgreesWithJCS(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var p lineParser
	h := sha256.New()
	for i := 0; i < 3000; i++ {
		data := map[string]any{}
		for n := r.IntN(5); n > 0; n-- {
			data[randString(r)] = randValue(r, 1)
		}
		goJSON, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		cd, err := canonicalData(json.RawMessage(goJSON))
		if err != nil {
			t.Fatal(err)
		}
		// Go's rendering is canonical only when jcs says so.
		if got, want := validCanonical(goJSON) == nil, jcsCanonical(goJSON); got != want {
			t.Fatalf("validator says %v, jcs says %v, on %s", got, want, goJSON)
		}
		b := testBinding
		b.Run = randString(r) + "r"
		prev := ""
		if i%2 == 1 {
			prev = "sha256:" + strings.Repeat("ab", 32)
		}
		seq := uint64(r.IntN(1000) + 2)
		if prev == "" {
			seq = 1
		}
		ln, hash := buildLine(nil, &b, seq, "check.finished", "2026-01-02T03:04:05.5Z", cd, prev)
		if !jcsCanonical(ln) {
			t.Fatalf("built line is not canonical: %s", ln)
		}
		var f fields
		if err := p.parse(ln, &f); err != nil {
			t.Fatalf("parse %s: %v", ln, err)
		}
		fast := "sha256:" + hex.EncodeToString(lineHash(h, ln, &f, nil))
		// Reference: drop hash from a generic decode, canonicalise, hash.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(ln))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		delete(m, "hash")
		ref, err := canon.Digest(m)
		if err != nil {
			t.Fatal(err)
		}
		ev := eventOf(ln, &f)
		slow, err := Hash(ev)
		if err != nil {
			t.Fatal(err)
		}
		if fast != ref || fast != slow || fast != hash || ev.Hash != hash {
			t.Fatalf("hashes disagree: fast %s jcs %s Hash %s built %s", fast, ref, slow, hash)
		}
		if ev.Run != b.Run {
			t.Fatalf("run %q decoded as %q", b.Run, ev.Run)
		}
	}
}

func TestNumbersAgreeWithJCS(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		f := randNumber(r)
		for _, s := range []string{
			strconv.FormatFloat(f, 'g', -1, 64),
			strconv.FormatFloat(f, 'e', -1, 64),
			strconv.FormatFloat(f, 'f', -1, 64),
			strconv.FormatFloat(f, 'E', 3, 64),
			string(appendES6(nil, f)),
		} {
			b := []byte(s)
			if got, want := validCanonical(b) == nil, jcsCanonical(b); got != want {
				t.Fatalf("%q: validator %v, jcs %v", s, got, want)
			}
		}
		if validCanonical(appendES6(nil, f)) != nil {
			t.Fatalf("ES6 form of %v refused", f)
		}
	}
}

func TestKeyOrderUTF16(t *testing.T) {
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"\u0001":1,"\n":2}`, true},
		{`{"\n":2,"\u0001":1}`, false},
		{"{\"\U0001F600\":1,\"\uE000\":2}", true}, // surrogates sort below U+E000
		{"{\"\uE000\":2,\"\U0001F600\":1}", false},
		{"{\"\uD7FF\":2,\"\U0001F600\":1}", true},
		{`{"a":1,"aa":2}`, true},
		{`{"aa":1,"a":2}`, false},
		{`{"\"":1,"\\":2}`, true},
	} {
		if got := validCanonical([]byte(tc.doc)) == nil; got != tc.ok || got != jcsCanonical([]byte(tc.doc)) {
			t.Errorf("%s: validator %v, want %v (jcs %v)", tc.doc, got, tc.ok, jcsCanonical([]byte(tc.doc)))
		}
	}
}

// TestVerifyAllocations: verifying allocates a constant amount, not per
// line.
func TestVerifyAllocations(t *testing.T) {
	raw := benchLog(t, 2000)
	small := raw[:bytes.IndexByte(raw[len(raw)/2:], '\n')+len(raw)/2+1]
	allocs := func(b []byte) float64 {
		return testing.AllocsPerRun(5, func() {
			if _, err := Verify(bytes.NewReader(b), nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	a1, a2 := allocs(small), allocs(raw)
	if a2 > a1+1 || a2 > 40 {
		t.Fatalf("Verify allocates per line: %v allocs for 1000 lines, %v for 2000", a1, a2)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":1}`, `{"b":1,"a":2}`, `1.0`, `1e21`, `1e+21`, `-0`, `0.000001`, `1e-7`,
		`"\u0000"`, `"\u001F"`, `"\/"`, `"\ud83d\ude00"`, "\"\U0001F600\"", `{"a":[1,2,{"c":null}]}`,
		`{"a" :1}`, ` 1`, `true`, `nul`, `123456789012345678`, `9007199254740993`, `4.35`, `1E3`,
		"{\"\uE000\":2,\"\U0001F600\":1}", `"` + "\x7f" + `"`, `"\b\f\n\r\t"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		err := validCanonical(b)
		ref := jcsCanonical(b)
		if err == nil && !ref {
			out, jerr := jcs.Transform(b)
			t.Fatalf("validator accepted %q; jcs gives %q, %v", b, out, jerr)
		}
		if err != nil && ref && !errors.Is(err, errDepth) {
			t.Fatalf("validator refused canonical %q: %v", b, err)
		}
	})
}

func FuzzRead(f *testing.F) {
	raw := benchLog(f, 3)
	f.Add(raw)
	f.Add(raw[:len(raw)-7])
	f.Add(append(bytes.Clone(raw), "garbage\n"...))
	ls := splitLines(raw)
	f.Add(join([][]byte{ls[1], ls[0]}))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"contract":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4<<20 {
			return
		}
		evs, err := Read(bytes.NewReader(b), nil)
		s, verr := Verify(bytes.NewReader(b), nil)
		if (err == nil) != (verr == nil) || len(evs) != s.Len {
			t.Fatalf("Read (%d, %v) and Verify (%d, %v) disagree", len(evs), err, s.Len, verr)
		}
		var ce *ChainError
		if err != nil && (!errors.As(err, &ce) || ce.Line < 1) {
			t.Fatalf("refusal is not a ChainError with a line: %v", err)
		}
		for i, e := range evs {
			h, herr := Hash(e)
			if herr != nil || h != e.Hash || e.Seq != uint64(i+1) {
				t.Fatalf("accepted event %d: Hash %s %v, carries %s, seq %d", i, h, herr, e.Hash, e.Seq)
			}
		}
	})
}

// special may report a plain word as special (a slower path), never the
// reverse.
func TestSpecialNeverMisses(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var w [8]byte
	for i := 0; i < 1_000_000; i++ {
		for k := range w {
			w[k] = byte(0x20 + r.IntN(0x60))
			if r.IntN(16) == 0 {
				w[k] = byte(r.IntN(256))
			}
		}
		any := false
		for _, ch := range w {
			any = any || !plain[ch]
		}
		if any && !special(uint64(w[0])|uint64(w[1])<<8|uint64(w[2])<<16|uint64(w[3])<<24|uint64(w[4])<<32|uint64(w[5])<<40|uint64(w[6])<<48|uint64(w[7])<<56) {
			t.Fatalf("special missed %q", w)
		}
	}
}
