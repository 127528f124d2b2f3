package exit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/proofgate/proofgate/kernel/exit"
)

// refusedError declares its class as a typed error of a package does.
type refusedError struct{ err error }

func (e *refusedError) Error() string        { return "refused: " + e.err.Error() }
func (e *refusedError) Unwrap() error        { return e.err }
func (e *refusedError) Is(target error) bool { return target == exit.Refused }

func TestClasses(t *testing.T) {
	plain := errors.New("plain")
	typed := &refusedError{plain}
	for name, c := range map[string]struct {
		err  error
		code int
	}{
		"nil":                 {nil, 0},
		"unclassified":        {plain, 4},
		"bare class":          {exit.Usage, 2},
		"wrapped":             {exit.Wrap(exit.Awaiting, plain), 3},
		"reported":            {exit.Reported(exit.Refused), 1},
		"typed":               {typed, 1},
		"typed, wrapped":      {fmt.Errorf("x: %w", typed), 1},
		"outer class wins":    {exit.Wrap(exit.Usage, typed), 2},
		"in a join":           {errors.Join(plain, exit.Wrap(exit.Usage, plain)), 2},
		"wrapped in fmt":      {fmt.Errorf("ctx: %w", exit.Wrap(exit.Environment, plain)), 4},
		"typed inside a wrap": {exit.Wrap(exit.Environment, fmt.Errorf("export: %w", typed)), 4},
	} {
		if got := exit.Code(c.err, exit.Environment); got != c.code {
			t.Errorf("%s: code %d, want %d", name, got, c.code)
		}
	}
	if !errors.Is(typed, exit.Refused) || errors.Is(typed, exit.Usage) {
		t.Error("a typed error is of its class only")
	}
	w := exit.Wrap(exit.Usage, typed)
	var re *refusedError
	if !errors.As(w, &re) || !errors.Is(w, plain) || !errors.Is(w, exit.Usage) || w.Error() != typed.Error() {
		t.Errorf("Wrap hides what it wraps: %v", w)
	}
	for c, want := range map[exit.Class]string{exit.Refused: "refused", exit.Usage: "usage", exit.Awaiting: "awaiting", exit.Environment: "environment", 9: "exit 9"} {
		if c.Error() != want {
			t.Errorf("%d: %q", c, c.Error())
		}
	}
}

// A sentinel is matched by identity, carries its class through wrapping,
// and is not an *exit.Error (an errors.As for one looks past it).
func TestSentinel(t *testing.T) {
	s := exit.Sentinel(exit.Usage, "no runs yet")
	w := fmt.Errorf("resolve latest: %w", s)
	if !errors.Is(w, s) || errors.Is(w, exit.Sentinel(exit.Usage, "no runs yet")) {
		t.Fatal("a sentinel is not matched by identity")
	}
	if c, ok := exit.Of(w); !ok || c != exit.Usage || exit.Code(w, exit.Environment) != 2 {
		t.Fatalf("class %v %v", c, ok)
	}
	var e *exit.Error
	if errors.As(w, &e) {
		t.Fatal("a sentinel is an *exit.Error")
	}
	if w.Error() != "resolve latest: no runs yet" {
		t.Fatal(w.Error())
	}
}
