package contract

import (
	"errors"
	"regexp"
	"strconv"

	"github.com/proofgate/proofgate/kernel/exit"
)

// Error is a contract that cannot be loaded: the file, the field path in
// the form checks[2].timeout, profiles.quick.checks[0].id or
// defaults.resources.memory ("" for the document itself), and what is wrong.
type Error struct {
	File string
	// Line and Column locate a YAML syntax error (1-based; 0 when the
	// error is not about one place in the text).
	Line, Column int
	Path         string
	Msg          string
	// Err is the underlying error, if any (e.g. from reading the file).
	Err error
}

// Error formats as `contract.yaml: checks[2].timeout: "10 minutes" is not a duration`,
// a YAML syntax error as `contract.yaml:5:1: invalid YAML: found character ...`.
func (e *Error) Error() string {
	s := e.File
	if s == "" {
		s = "contract"
	}
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Column)
	}
	if e.Path != "" {
		s += ": " + e.Path
	}
	return s + ": " + e.Msg
}

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *Error) Is(target error) bool { return target == exit.Usage }

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// AsError reports whether err is (or wraps) a contract *Error and returns it.
func AsError(err error) (*Error, bool) {
	var ce *Error
	ok := errors.As(err, &ce)
	return ce, ok
}

// fieldPath is a field path being built: "checks[2].timeout".
type fieldPath string

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

// key appends an object key; keys that are not plain words are quoted.
func (p fieldPath) key(k string) fieldPath {
	if !plainKey.MatchString(k) {
		return p + fieldPath("["+strconv.Quote(k)+"]")
	}
	if p == "" {
		return fieldPath(k)
	}
	return p + "." + fieldPath(k)
}

// idx appends an array index.
func (p fieldPath) idx(i int) fieldPath {
	return p + fieldPath("["+strconv.Itoa(i)+"]")
}
