package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// MaxLine bounds one event line, without its '\n'.
const MaxLine = 1 << 20

// MaxEvents bounds how many events a reader accepts.
const MaxEvents = 10_000_000

// maxType bounds an event type's length.
const maxType = 128

// span is a half-open byte range of a line.
type span struct{ s, e int }

func (p span) of(b []byte) []byte { return b[p.s:p.e] }

// fields are the offsets of a validated line's envelope. String spans
// cover the raw canonical content between the quotes; data covers the whole
// object; hash and prev cover the 64 hex digits.
type fields struct {
	contract, data, hash, prev, run, commit, tree, time, typ span
	prevNull                                                 bool
	seq                                                      uint64
	hashMember                                               span // `,"hash":"sha256:<hex>"`
}

// lineParser validates one line and extracts its envelope. It is reused
// across lines so that a valid line costs no allocation.
type lineParser struct {
	c scan
}

func (p *lineParser) expect(lit string) bool {
	c := &p.c
	if len(c.b)-c.i < len(lit) || string(c.b[c.i:c.i+len(lit)]) != lit {
		return false
	}
	c.i += len(lit)
	return true
}

func (p *lineParser) stringField(name string) (span, error) {
	c := &p.c
	if c.i >= len(c.b) || c.b[c.i] != '"' {
		return span{}, fmt.Errorf("field %s: not a string", name)
	}
	s, e, err := c.str()
	if err != nil {
		return span{}, fmt.Errorf("field %s: %w", name, err)
	}
	return span{s, e}, nil
}

func (p *lineParser) digestField(name string) (span, error) {
	sp, err := p.stringField(name)
	if err != nil {
		return sp, err
	}
	raw := sp.of(p.c.b)
	if len(raw) != len("sha256:")+64 || string(raw[:7]) != "sha256:" || !lowerHex(raw[7:]) {
		return sp, fmt.Errorf("field %s: not sha256:<64 lowercase hex>", name)
	}
	return span{sp.s + 7, sp.e}, nil
}

var isLowerHex = func() (t [256]bool) {
	for _, ch := range "0123456789abcdef" {
		t[ch] = true
	}
	return t
}()

func lowerHex(b []byte) bool {
	for _, ch := range b {
		if !isLowerHex[ch] {
			return false
		}
	}
	return true
}

// parse validates that line is a canonical event line and fills f. Only
// the envelope's shape is checked here; chaining is the reader's job.
//
// The members are read in their canonical order, split in two halves:
// contract to prev, then run to v.
func (p *lineParser) parse(line []byte, f *fields) error {
	if len(line) > MaxLine {
		return fmt.Errorf("line longer than %d bytes", MaxLine)
	}
	p.c.b, p.c.i = line, 0
	if err := p.parseToPrev(f); err != nil {
		return err
	}
	if err := p.parseFromRun(line, f); err != nil {
		return err
	}
	if p.c.i != len(line) {
		return errors.New("trailing bytes after the object")
	}
	if f.seq == 1 && !f.prevNull {
		return errors.New("seq 1 must have prev null")
	}
	return nil
}

// parseToPrev reads the members contract, data, hash and prev.
func (p *lineParser) parseToPrev(f *fields) error {
	c := &p.c
	var err error
	if !p.expect(`{"contract":`) {
		return p.shapeError("contract")
	}
	if f.contract, err = p.stringField("contract"); err != nil {
		return err
	}
	if !p.expect(`,"data":`) {
		return p.shapeError("data")
	}
	f.data.s = c.i
	if c.i >= len(c.b) || c.b[c.i] != '{' {
		return errors.New("field data: not an object")
	}
	if err := c.value(0); err != nil {
		return fmt.Errorf("field data: %w", err)
	}
	f.data.e = c.i
	f.hashMember.s = c.i
	if !p.expect(`,"hash":`) {
		return p.shapeError("hash")
	}
	if f.hash, err = p.digestField("hash"); err != nil {
		return err
	}
	f.hashMember.e = c.i
	if !p.expect(`,"prev":`) {
		return p.shapeError("prev")
	}
	f.prevNull = p.expect("null")
	if !f.prevNull {
		if f.prev, err = p.digestField("prev"); err != nil {
			return err
		}
	} else {
		f.prev = span{}
	}
	return nil
}

// parseFromRun reads the members run, seq, source, time, type and v.
func (p *lineParser) parseFromRun(line []byte, f *fields) error {
	var err error
	if !p.expect(`,"run":`) {
		return p.shapeError("run")
	}
	if f.run, err = p.stringField("run"); err != nil {
		return err
	}
	if !p.expect(`,"seq":`) {
		return p.shapeError("seq")
	}
	if f.seq, err = p.seqField(); err != nil {
		return err
	}
	if !p.expect(`,"source":{"commit":`) {
		return p.shapeError("source")
	}
	if f.commit, err = p.stringField("source.commit"); err != nil {
		return err
	}
	if !p.expect(`,"tree":`) {
		return p.shapeError("source.tree")
	}
	if f.tree, err = p.stringField("source.tree"); err != nil {
		return err
	}
	if !p.expect(`},"time":`) {
		return p.shapeError("time")
	}
	if f.time, err = p.stringField("time"); err != nil {
		return err
	}
	if !validTime(f.time.of(line)) {
		return errors.New("field time: not RFC 3339 UTC with nanoseconds as time.RFC3339Nano prints it")
	}
	if !p.expect(`,"type":`) {
		return p.shapeError("type")
	}
	if f.typ, err = p.stringField("type"); err != nil {
		return err
	}
	if !validType(f.typ.of(line)) {
		return errors.New("field type: must be 1-128 characters of [A-Za-z0-9._-]")
	}
	if !p.expect(`,"v":`) {
		return p.shapeError("v")
	}
	if !p.expect("1}") {
		return errors.New("field v: must be 1")
	}
	return nil
}

// shapeError explains why the envelope did not continue with the member
// called name: a missing, extra, reordered or non-canonical member.
func (p *lineParser) shapeError(name string) error {
	c := &p.c
	if c.i == 0 && (len(c.b) == 0 || c.b[0] != '{') {
		if err := validCanonical(c.b); err != nil {
			return fmt.Errorf("not canonical JSON: %w", err)
		}
		return errNotObject
	}
	return fmt.Errorf("at byte %d: expected member %q (members are exactly contract, data, hash, prev, run, seq, source{commit,tree}, time, type, v, in canonical form)", c.i, name)
}

func (p *lineParser) seqField() (uint64, error) {
	c := &p.c
	s := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	d := c.b[s:c.i]
	// 15 digits keep seq exactly representable as an IEEE double, so the
	// canonical form is the digits themselves.
	if len(d) == 0 || len(d) > 15 || d[0] == '0' {
		return 0, errors.New("field seq: must be a positive integer of at most 15 digits")
	}
	var v uint64
	for _, ch := range d {
		v = v*10 + uint64(ch-'0')
	}
	return v, nil
}

func validType(b []byte) bool {
	if len(b) == 0 || len(b) > maxType {
		return false
	}
	for _, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return false
		}
	}
	return true
}

// validTime accepts exactly what time.RFC3339Nano prints for a UTC time
// with a four-digit year: "2006-01-02T15:04:05[.fraction]Z", the fraction
// without trailing zeros.
func validTime(b []byte) bool {
	if len(b) < 20 || len(b) > 30 {
		return false
	}
	num := func(s []byte) (int, bool) {
		v := 0
		for _, ch := range s {
			if ch < '0' || ch > '9' {
				return 0, false
			}
			v = v*10 + int(ch-'0')
		}
		return v, true
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	minute, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return false
	}
	rest := b[19:]
	if len(rest) == 1 {
		return rest[0] == 'Z'
	}
	if rest[0] != '.' || rest[len(rest)-1] != 'Z' {
		return false
	}
	frac := rest[1 : len(rest)-1]
	if len(frac) == 0 || len(frac) > 9 || frac[len(frac)-1] == '0' {
		return false
	}
	_, ok := num(frac)
	return ok
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// lineHash hashes a validated line with its hash member removed: the
// canonical JSON of the event without "hash".
func lineHash(h interface {
	Reset()
	Write([]byte) (int, error)
	Sum([]byte) []byte
}, line []byte, f *fields, dst []byte) []byte {
	h.Reset()
	h.Write(line[:f.hashMember.s])
	h.Write(line[f.hashMember.e:])
	return h.Sum(dst[:0])
}

// hexEqual reports whether hx (64 lowercase hex digits) encodes sum.
func hexEqual(hx []byte, sum []byte) bool {
	const digits = "0123456789abcdef"
	if len(hx) != 2*len(sum) {
		return false
	}
	for k, v := range sum {
		if hx[2*k] != digits[v>>4] || hx[2*k+1] != digits[v&0xf] {
			return false
		}
	}
	return true
}

// buildLine assembles the canonical line of an event whose data is already
// canonical. It returns the line (without '\n') and its hash.
func buildLine(dst []byte, b *Binding, seq uint64, typ, tm string, data []byte, prev string) ([]byte, string) {
	dst = append(dst, `{"contract":`...)
	dst = appendString(dst, b.Contract)
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	cut := len(dst)
	dst = append(dst, `,"prev":`...)
	if prev == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, prev)
	}
	dst = append(dst, `,"run":`...)
	dst = appendString(dst, b.Run)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"source":{"commit":`...)
	dst = appendString(dst, b.Source.Commit)
	dst = append(dst, `,"tree":`...)
	dst = appendString(dst, b.Source.Tree)
	dst = append(dst, `},"time":`...)
	dst = appendString(dst, tm)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, typ)
	dst = append(dst, `,"v":1}`...)
	sum := sha256.Sum256(dst)
	hash := "sha256:" + hex.EncodeToString(sum[:])
	member := `,"hash":"` + hash + `"`
	out := make([]byte, 0, len(dst)+len(member))
	out = append(out, dst[:cut]...)
	out = append(out, member...)
	out = append(out, dst[cut:]...)
	return out, hash
}

// eventOf decodes a validated line into an Event.
func eventOf(line []byte, f *fields) Event {
	e := Event{
		V:        1,
		Seq:      f.seq,
		Run:      unquote(f.run.of(line)),
		Type:     string(f.typ.of(line)),
		Time:     string(f.time.of(line)),
		Source:   Source{Commit: unquote(f.commit.of(line)), Tree: unquote(f.tree.of(line))},
		Contract: unquote(f.contract.of(line)),
		Data:     bytes.Clone(f.data.of(line)),
		Hash:     "sha256:" + string(f.hash.of(line)),
	}
	if !f.prevNull {
		p := "sha256:" + string(f.prev.of(line))
		e.Prev = &p
	}
	return e
}

// formatTime is how events carry time.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
