// Package tool renders one call of a contract tool (contract.Tool): it
// decodes the call's arguments strictly, checks them against the tool's
// typed parameters, and builds the argv (and stdin) the runtime executes,
// never through a shell. It does no I/O.
//
// # Arguments
//
// The arguments are one JSON object of at most MaxArgs bytes, decoded by
// internal/strictjson (one value, valid UTF-8, no duplicate member names).
// Member names are parameter names, matched exactly: a member that names no
// parameter (including a case variant such as "Name" for "name") is
// refused, and so is a required parameter that is absent. null is no value
// of any type. Values by type:
//
//   - string: a JSON string without NUL, at most max_length Unicode code
//     points, matching pattern (Go RE2, as written: an unanchored pattern
//     matches a substring) and one of enum when they are set;
//   - path: a string as above that is also relative (no leading "/"),
//     equal to its filepath.Clean form, has no ".." element, does not
//     start with "-" (so it cannot become a flag), holds no backslash and
//     is not empty; Render does no I/O, so it lists the path values in
//     Call.Paths for its caller to resolve in the work tree
//     (internal/session, through internal/beneath: no link out of the tree,
//     no named pipe or device);
//   - integer: a JSON number written as an integer (no fraction, no
//     exponent, no "-0") within ±(2^53−1), the range in which the RFC 8785
//     canonical form that the input hash is computed over is exact: two
//     different integers beyond it would hash alike;
//   - boolean: true or false;
//   - array: a JSON array of at most max_items elements, each any JSON
//     value, nested at most MaxArrayDepth levels below the array (so a
//     conversation's messages can be passed). An array never becomes an
//     argv element: it reaches the tool only in the stdin JSON.
//
// Every refusal is an *ArgError with a Reason.
//
// # Rendering
//
// The argv is the tool's run with each element that is exactly "{{p}}"
// replaced by p's value as one element (integers in decimal, booleans as
// true/false); nothing else in run changes. With stdin: json, Stdin is the
// RFC 8785 canonical JSON of the arguments object, else nil.
package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// MaxArgs bounds the arguments object, in bytes.
const MaxArgs = 64 << 10

// MaxSafeInteger is the largest integer argument: 2^53−1.
const MaxSafeInteger = 1<<53 - 1

// Reason classifies an argument refusal.
type Reason string

// Refusal reasons.
const (
	ReasonTooLarge  Reason = "too-large" // the arguments exceed MaxArgs
	ReasonMalformed Reason = "malformed" // not one strict JSON object
	ReasonDuplicate Reason = "duplicate" // a member name repeated
	ReasonUnknown   Reason = "unknown"   // a member naming no parameter
	ReasonMissing   Reason = "missing"   // a required parameter absent
	ReasonType      Reason = "type"      // a value of the wrong JSON kind
	ReasonRange     Reason = "range"     // an integer outside ±(2^53−1)
	ReasonNUL       Reason = "nul"       // a string holding a NUL byte
	ReasonTooLong   Reason = "too-long"  // longer than max_length
	ReasonPattern   Reason = "pattern"   // does not match pattern
	ReasonEnum      Reason = "enum"      // not one of enum
	ReasonPath      Reason = "path"      // not a clean relative path
	ReasonTooMany   Reason = "too-many"  // an array with more than max_items elements
	ReasonTooDeep   Reason = "too-deep"  // an array nested deeper than MaxArrayDepth
	ReasonArgv      Reason = "argv"      // an array parameter named as an argv element
)

// MaxArrayDepth bounds the nesting of an array argument's elements: an
// element that is an object holding an array is two levels deep.
const MaxArrayDepth = 32

// ArgError is a refused argument. Param is "" when the arguments object as
// a whole is refused.
type ArgError struct {
	Param  string
	Why    string
	Reason Reason
}

func (e *ArgError) Error() string {
	if e.Param == "" {
		return "tool arguments: " + e.Why
	}
	// QuoteToASCII: a parameter name comes from the caller and may hide
	// confusable or control runes.
	return fmt.Sprintf("tool argument %s: %s", strconv.QuoteToASCII(e.Param), e.Why)
}

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *ArgError) Is(target error) bool { return target == exit.Usage }

func argErr(param string, r Reason, format string, args ...any) *ArgError {
	return &ArgError{Param: param, Reason: r, Why: fmt.Sprintf(format, args...)}
}

// Call is a rendered call.
type Call struct {
	Argv  []string
	Stdin []byte // canonical JSON of the arguments when the tool's stdin is "json", else nil
	// Paths holds the value of each path parameter given, by name: the
	// caller resolves them in the work tree (internal/beneath) before the
	// tool runs, which this package, doing no I/O, cannot.
	Paths map[string]string
}

// Render checks args (a JSON object) against t's parameters and renders the call.
func Render(t contract.Tool, args []byte) (Call, error) {
	vals, err := decodeArgs(args)
	if err != nil {
		return Call{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		if _, ok := t.Params[name]; !ok {
			return Call{}, argErr(name, ReasonUnknown, "the tool has no such parameter (parameters: %s)", paramNames(t))
		}
	}
	rendered := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(t.Params)) {
		p := t.Params[name]
		raw, ok := vals[name]
		if !ok {
			if p.Required {
				return Call{}, argErr(name, ReasonMissing, "required")
			}
			continue
		}
		s, err := value(name, p, raw)
		if err != nil {
			return Call{}, err
		}
		rendered[name] = s
	}
	c := Call{Argv: make([]string, len(t.Run))}
	for name, v := range rendered {
		if t.Params[name].Type == contract.ParamPath {
			if c.Paths == nil {
				c.Paths = map[string]string{}
			}
			c.Paths[name] = v
		}
	}
	for i, a := range t.Run {
		c.Argv[i] = a
		if name, ok := contract.TemplateParam(a); ok && i > 0 {
			if t.Params[name].Type == contract.ParamArray {
				// The loader refuses this; a hand-made tool is refused too.
				return Call{}, argErr(name, ReasonArgv, "an array parameter cannot be an argv element")
			}
			v, ok := rendered[name]
			if !ok {
				// The loader makes a template parameter required; a
				// hand-made tool without it is refused, not rendered.
				return Call{}, argErr(name, ReasonMissing, "named in run but not given")
			}
			c.Argv[i] = v
		}
	}
	if t.Stdin == contract.StdinJSON {
		b, err := canon.Transform(args)
		if err != nil {
			return Call{}, argErr("", ReasonMalformed, "%v", err)
		}
		c.Stdin = b
	}
	return c, nil
}

// decodeArgs strictly decodes the arguments object into raw member values.
func decodeArgs(args []byte) (map[string][]byte, error) {
	if len(args) > MaxArgs {
		return nil, argErr("", ReasonTooLarge, "%d bytes, more than the limit of %d", len(args), MaxArgs)
	}
	if t := bytes.TrimLeft(args, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, argErr("", ReasonMalformed, "not a JSON object")
	}
	var m map[string]json.RawMessage
	if err := strictjson.Decode(args, &m); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) && se.Kind == strictjson.Duplicate {
			return nil, argErr("", ReasonDuplicate, "%v", err)
		}
		return nil, argErr("", ReasonMalformed, "%v", err)
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = bytes.TrimSpace(v)
	}
	return out, nil
}

var integerRE = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// value checks one argument and returns its argv form.
func value(name string, p contract.Param, raw []byte) (string, error) {
	switch p.Type {
	case contract.ParamBoolean:
		switch string(raw) {
		case "true", "false":
			return string(raw), nil
		}
		return "", argErr(name, ReasonType, "want a boolean, got %s", kindOf(raw))
	case contract.ParamInteger:
		return integer(name, raw)
	case contract.ParamString, contract.ParamPath:
		return text(name, p, raw)
	case contract.ParamArray:
		return "", array(name, p, raw)
	}
	return "", argErr(name, ReasonType, "parameter type %q is not supported", p.Type)
}

func integer(name string, raw []byte) (string, error) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return "", argErr(name, ReasonType, "want an integer, got %s", kindOf(raw))
	}
	if !integerRE.Match(raw) {
		return "", argErr(name, ReasonType, "want an integer written without fraction, exponent or -0, got %s", truncate(string(raw), 32))
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > MaxSafeInteger || n < -MaxSafeInteger {
		return "", argErr(name, ReasonRange, "%s is outside ±%d", truncate(string(raw), 32), int64(MaxSafeInteger))
	}
	return strconv.FormatInt(n, 10), nil
}

func kindOf(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func paramNames(t contract.Tool) string {
	if len(t.Params) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(t.Params)), ", ")
}

// Spec returns the runtime spec of a rendered call: the tool's execution
// settings through contract.Execution.Spec (the function checks use), the
// rendered argv, and the call's stdin. action is the step id.
func Spec(runID, action string, t contract.Tool, c Call, repo string) runtime.Spec {
	s := t.Execution().Spec(runID, action, c.Argv, repo)
	if c.Stdin != nil {
		s.Stdin = bytes.Clone(c.Stdin)
	}
	return s
}
