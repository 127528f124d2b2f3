package eventlog

import (
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects inside data. It is lower
// than the limit of the jcs reference (10000): a deeper document is refused
// here, never canonicalised differently.
const maxDepth = 512

// Errors of the canonical-form validator. They are static so that validating
// a line allocates nothing.
var (
	errEOF         = errors.New("unexpected end of line")
	errSyntax      = errors.New("not JSON")
	errDepth       = errors.New("nesting too deep")
	errKeyOrder    = errors.New("object keys not sorted by UTF-16 code units or duplicated")
	errString      = errors.New("string not in canonical form")
	errControl     = errors.New("control character in string")
	errUTF8        = errors.New("invalid UTF-8 in string")
	errNumber      = errors.New("number not in canonical (ES6) form")
	errTrailing    = errors.New("trailing bytes after the object")
	errNotObject   = errors.New("not an object")
	errWhitespace  = errors.New("whitespace outside strings")
	errLiteralForm = errors.New("unknown literal")
)

// scan validates RFC 8785 canonical JSON in place. It never allocates: it
// walks the bytes once and only records offsets.
type scan struct {
	b   []byte
	i   int
	num [40]byte // scratch for number formatting
}

// value validates one canonical JSON value starting at c.i.
func (c *scan) value(depth int) error {
	if c.i >= len(c.b) {
		return errEOF
	}
	switch ch := c.b[c.i]; {
	case ch == '{':
		return c.object(depth + 1)
	case ch == '[':
		return c.array(depth + 1)
	case ch == '"':
		_, _, err := c.str()
		return err
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.number()
	case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
		return errWhitespace
	default:
		return errSyntax
	}
}

func (c *scan) literal(lit string) error {
	if len(c.b)-c.i < len(lit) || string(c.b[c.i:c.i+len(lit)]) != lit {
		return errLiteralForm
	}
	c.i += len(lit)
	return nil
}

func (c *scan) object(depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	c.i++ // '{'
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return nil
	}
	prevS, prevE := -1, -1
	for {
		if c.i >= len(c.b) {
			return errEOF
		}
		if c.b[c.i] != '"' {
			return errSyntax
		}
		ks, ke, err := c.str()
		if err != nil {
			return err
		}
		if prevS >= 0 && compareKeys(c.b[prevS:prevE], c.b[ks:ke]) >= 0 {
			return errKeyOrder
		}
		prevS, prevE = ks, ke
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return errSyntax
		}
		c.i++
		if err := c.value(depth); err != nil {
			return err
		}
		if c.i >= len(c.b) {
			return errEOF
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return nil
		default:
			return errSyntax
		}
	}
}

func (c *scan) array(depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	c.i++ // '['
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
		return nil
	}
	for {
		if err := c.value(depth); err != nil {
			return err
		}
		if c.i >= len(c.b) {
			return errEOF
		}
		switch c.b[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// shortEscape maps the characters RFC 8785 escapes with a two-character
// sequence to the escape letter.
var shortEscape = [32]byte{'\b': 'b', '\t': 't', '\n': 'n', '\f': 'f', '\r': 'r'}

// plain marks the ASCII bytes that stand for themselves inside a canonical
// string.
var plain = func() (t [256]bool) {
	for i := 0x20; i < 0x80; i++ {
		t[i] = i != '"' && i != '\\'
	}
	return t
}()

// special reports whether any byte of w is below 0x20, '"', '\\' or
// non-ASCII.
func special(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return (w|zero(w^(ones*'"'))|zero(w^(ones*'\\'))|((w-ones*0x20)&^w))&highs != 0
}

// str validates a canonical string starting at the opening quote and
// returns the offsets of its raw content (between the quotes).
func (c *scan) str() (start, end int, err error) {
	b := c.b
	i := c.i + 1
	start = i
	for {
		// Eight bytes at a time while none needs a closer look.
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, 0, errEOF
		}
		switch ch := b[i]; {
		case ch == '"':
			c.i = i + 1
			return start, i, nil
		case ch == '\\':
			if i+1 >= len(b) {
				return 0, 0, errEOF
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				// Only control characters without a short form are
				// written as \u00xx, in lowercase hex.
				if i+6 > len(b) || b[i+2] != '0' || b[i+3] != '0' || (b[i+4] != '0' && b[i+4] != '1') {
					return 0, 0, errString
				}
				lo := b[i+5]
				var v byte
				switch {
				case lo >= '0' && lo <= '9':
					v = lo - '0'
				case lo >= 'a' && lo <= 'f':
					v = lo - 'a' + 10
				default:
					return 0, 0, errString
				}
				v += (b[i+4] - '0') << 4
				if shortEscape[v] != 0 {
					return 0, 0, errString
				}
				i += 6
			default:
				return 0, 0, errString
			}
		case ch < 0x20:
			return 0, 0, errControl
		default: // non-ASCII
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, 0, errUTF8
			}
			i += size
		}
	}
}

// number validates a canonical number: the exact text ECMAScript's
// Number.prototype.toString (RFC 8785 §3.2.2.3) gives for its value.
func (c *scan) number() error {
	b := c.b
	s := c.i
	i := s
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return errNumber
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	} else {
		return errNumber
	}
	simple := true
	if i < len(b) && b[i] == '.' {
		simple = false
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return errNumber
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		simple = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return errNumber
		}
	}
	tok := b[s:i]
	c.i = i
	if simple {
		digits := len(tok)
		if tok[0] == '-' {
			digits--
		}
		// Up to 15 significant digits an integer is exactly representable
		// and prints as itself; the grammar above already refused leading
		// zeros. Only "-0" is not canonical.
		if digits <= 15 {
			if len(tok) == 2 && tok[0] == '-' && tok[1] == '0' {
				return errNumber
			}
			return nil
		}
	}
	if len(tok) > 32 { // no canonical number is this long
		return errNumber
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return errNumber
	}
	out := appendES6(c.num[:0], f)
	if string(out) != string(tok) {
		return errNumber
	}
	return nil
}

// appendES6 appends the ECMAScript-6 form of f (finite).
func appendES6(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	format := byte('e')
	if f < 1e21 && f >= 1e-6 {
		format = 'f'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	// Go prints "1e+09"; ES6 prints "1e+9".
	for k := start; k < len(dst); k++ {
		if dst[k] == 'e' {
			if k+2 < len(dst) && dst[k+2] == '0' {
				copy(dst[k+2:], dst[k+3:])
				dst = dst[:len(dst)-1]
			}
			break
		}
	}
	return dst
}

// compareKeys compares two canonical raw string contents by UTF-16 code
// units, as RFC 8785 §3.2.3 sorts object members.
func compareKeys(a, b []byte) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if ca == cb && ca < 0x80 && ca != '\\' {
			i++
			j++
			continue
		}
		ra, na := decodeRaw(a[i:])
		rb, nb := decodeRaw(b[j:])
		ka, kb := utf16Order(ra), utf16Order(rb)
		if ka != kb {
			if ka < kb {
				return -1
			}
			return 1
		}
		i += na
		j += nb
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return 0
}

// utf16Order maps a code point to a value whose order is the order of its
// UTF-16 encoding: BMP characters above the surrogate block sort after all
// supplementary characters.
func utf16Order(r rune) rune {
	if r >= 0xE000 && r <= 0xFFFF {
		return r + 0x110000
	}
	return r
}

// decodeRaw decodes one character of validated canonical string content.
func decodeRaw(b []byte) (rune, int) {
	if b[0] != '\\' {
		if b[0] < 0x80 {
			return rune(b[0]), 1
		}
		return utf8.DecodeRune(b)
	}
	switch b[1] {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		v, _ := strconv.ParseUint(string(b[2:6]), 16, 16)
		return rune(v), 6
	}
	return rune(b[1]), 2 // '"' or '\\'
}

// unquote decodes validated canonical string content.
func unquote(raw []byte) string {
	simple := true
	for _, ch := range raw {
		if ch == '\\' {
			simple = false
			break
		}
	}
	if simple {
		return string(raw)
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			out = append(out, raw[i])
			i++
			continue
		}
		r, n := decodeRaw(raw[i:])
		out = append(out, byte(r)) // escapes only ever stand for ASCII
		i += n
	}
	return string(out)
}

// appendString appends the RFC 8785 canonical encoding of s. s must be
// valid UTF-8.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"' || ch == '\\':
			dst = append(dst, '\\', ch)
		case ch < 0x20:
			if e := shortEscape[ch]; e != 0 {
				dst = append(dst, '\\', e)
			} else {
				const hex = "0123456789abcdef"
				dst = append(dst, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xf])
			}
		default:
			dst = append(dst, ch)
		}
	}
	return append(dst, '"')
}

// validCanonical reports whether b is exactly one canonical JSON value.
func validCanonical(b []byte) error {
	c := scan{b: b}
	if err := c.value(0); err != nil {
		return err
	}
	if c.i != len(b) {
		return errTrailing
	}
	return nil
}
