// Package strictjson is the one JSON decoder ProofGate reads input with
// (docs/SPEC.md section 8, "Decoding"; ADR 0008). encoding/json matches member names
// case-insensitively and lets a later duplicate win, so {"status":"revoked",
// "Status":"active"} reads as active; this package refuses both.
//
// Every decode enforces:
//
//   - exactly one JSON value, valid UTF-8, nothing but white space after it;
//   - at most MaxSize bytes and MaxDepth levels of nesting;
//   - no duplicate member names in any object, at any depth, including
//     inside maps, any and json.RawMessage values;
//   - member names match struct fields case-sensitively, and a member whose
//     name differs from a defined field only by case (strings.EqualFold) is
//     refused, even in open formats;
//   - in closed formats (Decode, Read) a member that names no field is
//     refused; open formats (DecodeOpen, ReadOpen: GitHub payloads) ignore it.
//
// A refusal is an *Error whose Path names the offending member, for
// example keys[0].Status.
//
// The structural checks walk the tokens with jsontext against the Go type;
// the value itself is then decoded by github.com/go-json-experiment/json
// (the encoding/json/v2 prototype), which is case-sensitive and refuses
// duplicate names on its own. UnmarshalJSON methods, json.RawMessage and
// json.Number keep their encoding/json meaning.
package strictjson

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/proofgate/proofgate/internal/bounded"
)

// Bounds on one decoded document. Callers with tighter limits check them
// first (or pass them to Read).
const (
	MaxSize  = 64 << 20
	MaxDepth = 512
)

// Kind classifies a refusal, for callers that branch on it.
type Kind string

// Refusal kinds.
const (
	Syntax      Kind = "syntax"       // not one well-formed JSON value
	Duplicate   Kind = "duplicate"    // a member name repeated in one object
	CaseVariant Kind = "case-variant" // a member differing from a field only by case
	Unknown     Kind = "unknown"      // a member naming no field (closed formats)
	Type        Kind = "type"         // a value of the wrong JSON kind or range
	Trailing    Kind = "trailing"     // data after the value
	TooLarge    Kind = "too-large"    // more than the size bound
	TooDeep     Kind = "too-deep"     // nested deeper than MaxDepth
)

// Error is a refused document.
type Error struct {
	Kind   Kind
	Path   string // e.g. keys[0].Status; "" is the document itself
	Detail string
	Err    error // the library error, if any
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Detail
	}
	return e.Path + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Decode strictly decodes b into v; members naming no field are refused.
func Decode(b []byte, v any) error { return decode(b, v, false) }

// DecodeOpen is Decode for open formats: members naming no field are
// ignored, but duplicates and case variants of a defined field are not.
func DecodeOpen(b []byte, v any) error { return decode(b, v, true) }

// Read reads at most max bytes from r (MaxSize if max <= 0) and decodes them
// as Decode does. More than max bytes is a TooLarge error.
func Read(r io.Reader, max int64, v any) error {
	b, err := readBounded(r, max)
	if err != nil {
		return err
	}
	return decode(b, v, false)
}

// ReadOpen is Read for open formats (see DecodeOpen).
func ReadOpen(r io.Reader, max int64, v any) error {
	b, err := readBounded(r, max)
	if err != nil {
		return err
	}
	return decode(b, v, true)
}

func readBounded(r io.Reader, max int64) ([]byte, error) {
	if max <= 0 || max > MaxSize {
		max = MaxSize
	}
	b, err := bounded.ReadAll(r, max)
	var tl *bounded.TooLargeError
	if errors.As(err, &tl) {
		return nil, &Error{Kind: TooLarge, Detail: tl.Error()}
	}
	return b, err
}

func decode(b []byte, v any, open bool) error {
	if len(b) > MaxSize {
		return &Error{Kind: TooLarge, Detail: fmt.Sprintf("larger than %d bytes", MaxSize)}
	}
	if err := check(b, v, open); err != nil {
		return err
	}
	err := json.Unmarshal(b, v,
		json.RejectUnknownMembers(!open),
		json.WithUnmarshalers(numberUnmarshaler))
	if err != nil {
		return libraryError(err)
	}
	return nil
}

// numberUnmarshaler gives encoding/json.Number its encoding/json meaning:
// a JSON number (or a string holding one) kept as its text.
var numberUnmarshaler = json.UnmarshalFromFunc(func(d *jsontext.Decoder, n *stdjson.Number) error {
	tok, err := d.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '0':
		*n = stdjson.Number(tok.String())
		return nil
	case '"':
		s := tok.String()
		if !isNumber(s) {
			return fmt.Errorf("%q is not a JSON number", s)
		}
		*n = stdjson.Number(s)
		return nil
	case 'n':
		return nil
	}
	return errors.New("not a number")
})

// isNumber reports whether s is exactly one JSON number.
func isNumber(s string) bool {
	d := jsontext.NewDecoder(bytes.NewReader([]byte(s)))
	tok, err := d.ReadToken()
	if err != nil || tok.Kind() != '0' {
		return false
	}
	_, err = d.ReadToken()
	return err == io.EOF
}

// libraryError turns a go-json-experiment error into an *Error with a path.
func libraryError(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) {
		kind, detail := Type, "cannot decode"
		if se.JSONKind != 0 {
			detail = fmt.Sprintf("cannot decode JSON %s", kindName(se.JSONKind))
		}
		if se.GoType != nil {
			detail += " into Go " + se.GoType.String()
		}
		if errors.Is(se.Err, json.ErrUnknownName) {
			kind, detail = Unknown, "unknown member"
		} else if se.Err != nil {
			detail += ": " + se.Err.Error()
		}
		return &Error{Kind: kind, Path: pointerPath(se.JSONPointer), Detail: detail, Err: err}
	}
	var sx *jsontext.SyntacticError
	if errors.As(err, &sx) {
		return &Error{Kind: Syntax, Path: pointerPath(sx.JSONPointer), Detail: sx.Err.Error(), Err: err}
	}
	return &Error{Kind: Type, Detail: err.Error(), Err: err}
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}
