package strictjson

import (
	"bytes"
	"encoding"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// walker checks one document's structure against the Go type it is
// decoded into: duplicates, case variants, unknown members, depth and
// trailing data. It reads tokens only; it never allocates values.
type walker struct {
	d    *jsontext.Decoder
	open bool
	path []pathElem
}

// pathElem is one step of a path: a member name or an array index.
type pathElem struct {
	name  string
	index int
	isIdx bool // index, not name, is the step
}

func check(b []byte, v any, open bool) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return &Error{Kind: Type, Detail: fmt.Sprintf("cannot decode into %v: not a pointer", t)}
	}
	w := &walker{
		// Duplicates are detected by the walk, which knows the path.
		d:    jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true)),
		open: open,
	}
	if err := w.value(t.Elem(), 0); err != nil {
		return err
	}
	if _, err := w.d.ReadToken(); err != io.EOF {
		return &Error{Kind: Trailing, Detail: "data after the JSON value"}
	}
	return nil
}

func (w *walker) fail(kind Kind, format string, args ...any) error {
	return &Error{Kind: kind, Path: formatPath(w.path), Detail: fmt.Sprintf(format, args...)}
}

func (w *walker) token() (jsontext.Token, error) {
	tok, err := w.d.ReadToken()
	if err != nil {
		if err == io.EOF {
			return tok, w.fail(Syntax, "unexpected end of JSON input")
		}
		var sx *jsontext.SyntacticError
		if errors.As(err, &sx) {
			return tok, w.fail(Syntax, "%v", sx.Err)
		}
		return tok, w.fail(Syntax, "%v", err)
	}
	return tok, nil
}

// value walks one value that decodes into Go type t (nil: no type is known,
// as inside any, json.RawMessage or a type with its own UnmarshalJSON).
func (w *walker) value(t reflect.Type, depth int) error {
	if depth > MaxDepth {
		return w.fail(TooDeep, "nested deeper than %d levels", MaxDepth)
	}
	t = shape(t)
	tok, err := w.token()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '{':
		return w.object(t, depth)
	case '[':
		return w.array(t, depth)
	}
	return nil
}

func (w *walker) object(t reflect.Type, depth int) error {
	var fs *fieldSet
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fs = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]struct{}{}
	for {
		tok, err := w.token()
		if err != nil {
			return err
		}
		if tok.Kind() == '}' {
			return nil
		}
		name := tok.String()
		w.path = append(w.path, pathElem{name: name})
		if _, dup := seen[name]; dup {
			return w.fail(Duplicate, "duplicate member %q", name)
		}
		seen[name] = struct{}{}
		ft := elem
		if fs != nil {
			f, ok := fs.exact[name]
			switch {
			case ok:
				ft = f
			case fs.variant(name) != "":
				return w.fail(CaseVariant, "member %q differs from the field %q only by case", name, fs.variant(name))
			case !w.open:
				return w.fail(Unknown, "unknown member %q", name)
			}
		}
		if err := w.value(ft, depth+1); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
}

func (w *walker) array(t reflect.Type, depth int) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for i := 0; ; i++ {
		if w.d.PeekKind() == ']' {
			_, err := w.token()
			return err
		}
		w.path = append(w.path, pathElem{index: i, isIdx: true})
		if err := w.value(elem, depth+1); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
}

var (
	stdUnmarshaler  = reflect.TypeFor[stdjson.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	v2Unmarshaler   = reflect.TypeFor[json.UnmarshalerFrom]()
)

// shape strips pointers and returns nil for a type whose members the walk
// cannot know: interfaces and types that decode themselves.
func shape(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Kind() == reflect.Interface || decodesItself(t) {
			return nil
		}
		if t.Kind() != reflect.Pointer {
			return t
		}
		t = t.Elem()
	}
	return nil
}

func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	for _, m := range []reflect.Type{stdUnmarshaler, textUnmarshaler, v2Unmarshaler} {
		if t.Implements(m) || p.Implements(m) {
			return true
		}
	}
	return false
}

// fieldSet is the JSON member names of a struct type and their Go types.
type fieldSet struct {
	exact map[string]reflect.Type
	names []string
}

// variant returns the field name that name matches only by case, or "".
func (fs *fieldSet) variant(name string) string {
	for _, n := range fs.names {
		if strings.EqualFold(n, name) {
			return n
		}
	}
	return ""
}

var fieldCache sync.Map // reflect.Type -> *fieldSet

// fieldsOf lists the members of struct type t as go-json-experiment (and
// encoding/json) name them: the json tag's name or the Go field name,
// "-" and unexported fields skipped, untagged embedded structs inlined
// (the shallower of two equal names wins).
func fieldsOf(t reflect.Type) *fieldSet {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{exact: map[string]reflect.Type{}}
	addFields(fs, t, map[reflect.Type]bool{})
	fieldCache.Store(t, fs)
	return fs
}

func addFields(fs *fieldSet, t reflect.Type, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	var embedded []reflect.Type
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			if et := derefType(sf.Type); et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, ok := fs.exact[name]; !ok {
			fs.exact[name] = sf.Type
			fs.names = append(fs.names, name)
		}
	}
	for _, et := range embedded {
		addFields(fs, et, visiting)
	}
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// formatPath renders a path as keys[0].status; a name that is not a plain
// identifier is quoted: checks["a.b"].
func formatPath(p []pathElem) string {
	var b strings.Builder
	for _, e := range p {
		switch {
		case e.isIdx:
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
		case plainName(e.name):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.name)
		default:
			b.WriteString("[" + strconv.Quote(e.name) + "]")
		}
	}
	return b.String()
}

func plainName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// pointerPath renders a JSON pointer from the library in the same form.
// A token of digits is taken as an array index.
func pointerPath(p jsontext.Pointer) string {
	var elems []pathElem
	for tok := range p.Tokens() {
		if n, err := strconv.Atoi(tok); err == nil && n >= 0 && strconv.Itoa(n) == tok {
			elems = append(elems, pathElem{index: n, isIdx: true})
			continue
		}
		elems = append(elems, pathElem{name: tok})
	}
	return formatPath(elems)
}
