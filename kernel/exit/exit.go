// Package exit names the few classes every ProofGate failure falls in, and
// the one process exit code of each (docs/cli.md "Exit codes", docs/action.md):
//
//	0  success (no class)
//	1  Refused      a check failed or a verification was refused
//	2  Usage        bad usage or invalid input
//	3  Awaiting     awaiting approval
//	4  Environment  no Docker, no network to GitHub, unwritable state
//
// A typed error declares its class by wrapping a Class or by an Is method
// (func (e *T) Is(target error) bool { return target == exit.Refused }),
// as sigstore-go's errors wrap ErrValidation; errors.Is(err, exit.Refused)
// then holds. Adapters (the CLI, the GitHub Action, an MCP server) map an
// error to their own answer with Of or Code, never with a table of their
// own.
package exit

import "strconv"

// Class is the class of a failure. Its value is the process exit code, and
// it is an error itself, so that a Class is the sentinel typed errors wrap.
type Class int

// The classes, valued by their exit code.
const (
	Refused     Class = 1 // a check failed or a verification was refused
	Usage       Class = 2 // bad usage or invalid input
	Awaiting    Class = 3 // awaiting approval
	Environment Class = 4 // environment: no Docker, no network, unwritable state
)

// OK is the exit code of success.
const OK = 0

var names = map[Class]string{Refused: "refused", Usage: "usage", Awaiting: "awaiting", Environment: "environment"}

func (c Class) Error() string {
	if n, ok := names[c]; ok {
		return n
	}
	return "exit " + strconv.Itoa(int(c))
}

// Code is c's process exit code.
func (c Class) Code() int { return int(c) }

// Error is Err classified as Class. A nil Err is a failure that was already
// reported (for example as JSON): only its class, and so its exit code,
// remain.
type Error struct {
	Class Class
	Err   error
}

// Wrap classifies err as c.
func Wrap(c Class, err error) *Error { return &Error{Class: c, Err: err} }

// Reported is a failure of class c that its caller already reported.
func Reported(c Class) *Error { return &Error{Class: c} }

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Class.Error()
	}
	return e.Err.Error()
}

// Unwrap returns the classified error and the class.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Class}
	}
	return []error{e.Err, e.Class}
}

// Of returns the class of err: the outermost class its chain wraps or
// declares (so a caller's Wrap overrides a class deeper in the chain), and
// false when there is none.
func Of(err error) (Class, bool) {
	if err == nil {
		return 0, false
	}
	switch x := err.(type) {
	case Class:
		return x, true
	case *Error:
		return x.Class, true
	}
	if is, ok := err.(interface{ Is(error) bool }); ok {
		for _, c := range []Class{Refused, Usage, Awaiting, Environment} {
			if is.Is(c) {
				return c, true
			}
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return Of(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if c, ok := Of(e); ok {
				return c, true
			}
		}
	}
	return 0, false
}

// Code returns the exit code of err: OK for nil, its class's code, or
// otherwise's when err has no class.
func Code(err error, otherwise Class) int {
	if err == nil {
		return OK
	}
	if c, ok := Of(err); ok {
		return int(c)
	}
	return int(otherwise)
}

// Sentinel returns an error with text whose class is c, for a package's
// sentinel errors: errors.Is matches it by identity, exit.Of finds its
// class, and errors.As of an *Error does not stop at it.
func Sentinel(c Class, text string) error { return &sentinel{class: c, text: text} }

type sentinel struct {
	class Class
	text  string
}

func (e *sentinel) Error() string { return e.text }

// Is reports whether target is e's class.
func (e *sentinel) Is(target error) bool { return target == e.class }
