package input

import (
	"bytes"
	"errors"
	"io"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Canonical returns the canonical JSON of raw, a JSON object, decoded
// strictly and bounded (see the package doc).
func Canonical(raw []byte) ([]byte, error) {
	if len(raw) > MaxInput {
		return nil, fail(ReasonTooLarge, "input is %d bytes, more than %d", len(raw), MaxInput)
	}
	obj, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	if err := checkNames(raw); err != nil {
		return nil, err
	}
	if f, ok := obj["format"]; ok && bytes.Equal(canonOrNil(f), []byte(`"`+ManifestFormat+`"`)) {
		return nil, fail(ReasonReserved, "member format: %q is reserved for input manifests", ManifestFormat)
	}
	c, err := canon.Transform(raw)
	if err != nil {
		return nil, &Error{Reason: ReasonSyntax, Detail: "cannot canonicalise: " + err.Error(), Err: err}
	}
	if len(c) > MaxInput {
		return nil, fail(ReasonTooLarge, "canonical input is %d bytes, more than %d", len(c), MaxInput)
	}
	return c, nil
}

func canonOrNil(b []byte) []byte {
	c, err := canon.Transform(b)
	if err != nil {
		return nil
	}
	return c
}

// decodeObject strictly decodes raw as one JSON object.
func decodeObject(raw []byte) (rawObject, error) {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) > 0 && t[0] != '{' {
		// Syntax errors win over the kind, so check the document first.
		var v any
		if err := strictjson.Decode(raw, &v); err != nil {
			return nil, strictError(err)
		}
		return nil, fail(ReasonNotObject, "input is not a JSON object")
	}
	var obj rawObject
	if err := strictjson.Decode(raw, &obj); err != nil {
		return nil, strictError(err)
	}
	if obj == nil {
		return nil, fail(ReasonNotObject, "input is not a JSON object")
	}
	return obj, nil
}

func strictError(err error) error {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return &Error{Reason: ReasonSyntax, Detail: err.Error(), Err: err}
	}
	r := ReasonSyntax
	switch se.Kind {
	case strictjson.Duplicate:
		r = ReasonDuplicate
	case strictjson.CaseVariant:
		r = ReasonCaseVariant
	case strictjson.TooLarge:
		r = ReasonTooLarge
	case strictjson.TooDeep:
		r = ReasonTooDeep
	case strictjson.Type:
		r = ReasonNotObject
	}
	return &Error{Reason: r, Detail: se.Error(), Err: err}
}

// checkNames walks raw (already known to be well-formed) for nesting
// beyond MaxDepth and member names equal under simple case folding.
func checkNames(raw []byte) error {
	d := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true))
	var stack []map[string]string // per open object: fold key -> name
	for {
		kind := d.PeekKind()
		if kind == 0 {
			return nil
		}
		tok, err := d.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &Error{Reason: ReasonSyntax, Detail: err.Error(), Err: err}
		}
		if d.StackDepth() > MaxDepth {
			return fail(ReasonTooDeep, "nested deeper than %d levels at %s", MaxDepth, d.StackPointer())
		}
		switch tok.Kind() {
		case '{':
			stack = append(stack, map[string]string{})
			continue
		case '}':
			stack = stack[:len(stack)-1]
			continue
		case '"':
		default:
			continue
		}
		// A string is a member name when the innermost container is an
		// object expecting a name.
		if len(stack) == 0 {
			continue
		}
		k, n := d.StackIndex(d.StackDepth())
		if k != '{' || n%2 == 0 {
			continue
		}
		names := stack[len(stack)-1]
		name := tok.String()
		key := foldKey(name)
		if prev, ok := names[key]; ok && prev != name {
			return fail(ReasonCaseVariant, "member names %q and %q differ only by case at %s", prev, name, d.StackPointer())
		}
		names[key] = name
	}
}

// foldKey maps every rune to the least rune of its simple folding orbit, so
// two strings have equal keys exactly when strings.EqualFold holds.
func foldKey(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < m {
				m = f
			}
		}
		b.WriteRune(m)
	}
	return b.String()
}

func readBounded(r io.Reader) ([]byte, error) {
	return bounded.ReadAll(r, maxBlob)
}
