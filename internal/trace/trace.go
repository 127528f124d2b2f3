// Package trace parses and propagates W3C Trace Context level 1
// (https://www.w3.org/TR/trace-context/) for tool calls. It does no I/O.
//
// # traceparent
//
//	version "-" trace-id "-" parent-id "-" trace-flags
//	00      -   32 lowercase hex -  16 lowercase hex - 2 lowercase hex
//
// Version 00 is exactly 55 characters. Version ff is refused, as is any
// version that is not two lowercase hex digits. A higher version is parsed
// as the specification says for future versions: at least 55 characters,
// the first four fields as in version 00, and the character after the flags
// (if any) must be "-"; what follows it is ignored. A trace id or parent id
// of all zeros is refused. Uppercase hex is refused everywhere. Headers
// longer than MaxTraceparent are refused (a bound of this implementation).
//
// # tracestate
//
// A comma-separated list of at most 32 list members (empty members, which
// the specification allows, count too), at most 512 bytes in all:
//
//	list-member = key "=" value, with optional spaces or tabs around it
//	key   = lcalpha 0*255( lcalpha / DIGIT / "_" / "-" / "*" / "/" )
//	      / ( lcalpha / DIGIT ) 0*240( same ) "@" lcalpha 0*13( same )
//	value = 0*255( %x20-2B / %x2D-3C / %x3E-7E ) ( %x21-2B / %x2D-3C / %x3E-7E )
//
// A key that appears twice is refused. Parent.State holds the members
// trimmed and joined with "," (empty members dropped): the form Child
// propagates.
//
// # Child
//
// Child keeps the trace id, records the parent's span id as the parent span
// id, draws a fresh non-zero 8-byte span id from crypto/rand and keeps the
// sampled flag only (level 1 defines no other flag, and a vendor must send
// undefined flags as zero). Traceparent formats a Span as version 00.
package trace

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// Bounds.
const (
	MaxTraceparent = 512 // bytes of a traceparent (any version)
	MaxTracestate  = 512 // bytes of a tracestate
	MaxMembers     = 32  // list members of a tracestate
)

// Sampled is the trace-flags bit level 1 defines.
const Sampled byte = 0x01

// Reasons a header is refused.
const (
	ReasonLength    = "length"     // wrong length for its version, or over the bound
	ReasonFormat    = "format"     // a separator missing or misplaced
	ReasonHex       = "hex"        // a field that is not lowercase hex
	ReasonVersion   = "version"    // version ff
	ReasonZeroTrace = "zero-trace" // an all-zero trace id
	ReasonZeroSpan  = "zero-span"  // an all-zero parent id
	ReasonMembers   = "members"    // more than MaxMembers list members
	ReasonMember    = "member"     // a list member without "="
	ReasonKey       = "key"        // a key outside the grammar
	ReasonValue     = "value"      // a value outside the grammar
	ReasonDuplicate = "duplicate"  // a key listed twice
)

// Error is a refused traceparent or tracestate.
type Error struct {
	Header string // "traceparent" or "tracestate"
	Reason string
	Detail string
}

func (e *Error) Error() string { return "trace: " + e.Header + ": " + e.Reason + ": " + e.Detail }

func tpErr(reason, format string, args ...any) *Error {
	return &Error{Header: "traceparent", Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

func tsErr(reason, format string, args ...any) *Error {
	return &Error{Header: "tracestate", Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Parent is a parsed incoming trace context.
type Parent struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
	State   string
}

// Span is the trace context a receipt records.
type Span struct {
	TraceID      string `json:"trace_id"`
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id"`
	Flags        string `json:"flags"`
	State        string `json:"tracestate,omitempty"`
}

// Parse parses a traceparent and a tracestate ("" for none).
func Parse(traceparent, tracestate string) (Parent, error) {
	p, err := parseParent(traceparent)
	if err != nil {
		return Parent{}, err
	}
	if p.State, err = parseState(tracestate); err != nil {
		return Parent{}, err
	}
	return p, nil
}

func parseParent(s string) (Parent, error) {
	var p Parent
	if len(s) > MaxTraceparent {
		return p, tpErr(ReasonLength, "%d bytes, more than %d", len(s), MaxTraceparent)
	}
	if len(s) < 2 || !lowerHex(s[:2]) {
		return p, tpErr(ReasonHex, "version is not two lowercase hex digits")
	}
	version := s[:2]
	switch {
	case version == "ff":
		return p, tpErr(ReasonVersion, "version ff is invalid")
	case version == "00" && len(s) != 55:
		return p, tpErr(ReasonLength, "version 00 is 55 characters, not %d", len(s))
	case len(s) < 55:
		return p, tpErr(ReasonLength, "%d characters, fewer than 55", len(s))
	case len(s) > 55 && s[55] != '-':
		return p, tpErr(ReasonFormat, "a future version's flags must be followed by \"-\"")
	}
	for _, i := range []int{2, 35, 52} {
		if s[i] != '-' {
			return p, tpErr(ReasonFormat, "no \"-\" at position %d", i)
		}
	}
	for _, f := range []struct{ name, hex string }{{"trace-id", s[3:35]}, {"parent-id", s[36:52]}, {"trace-flags", s[53:55]}} {
		if !lowerHex(f.hex) {
			return p, tpErr(ReasonHex, "%s is not lowercase hex", f.name)
		}
	}
	hex.Decode(p.TraceID[:], []byte(s[3:35]))
	hex.Decode(p.SpanID[:], []byte(s[36:52]))
	var fl [1]byte
	hex.Decode(fl[:], []byte(s[53:55]))
	p.Flags = fl[0]
	if p.TraceID == [16]byte{} {
		return Parent{}, tpErr(ReasonZeroTrace, "trace-id is all zeros")
	}
	if p.SpanID == [8]byte{} {
		return Parent{}, tpErr(ReasonZeroSpan, "parent-id is all zeros")
	}
	return p, nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Traceparent formats p as a version 00 traceparent, its flags as parsed.
func (p Parent) Traceparent() string {
	return fmt.Sprintf("00-%x-%x-%02x", p.TraceID[:], p.SpanID[:], p.Flags)
}

// Child returns the span of a call made under p, with a fresh span id.
func (p Parent) Child() (Span, error) {
	if p.TraceID == [16]byte{} || p.SpanID == [8]byte{} {
		return Span{}, tpErr(ReasonZeroTrace, "no parent trace context")
	}
	var id [8]byte
	for id == [8]byte{} {
		if _, err := rand.Read(id[:]); err != nil {
			return Span{}, fmt.Errorf("trace: span id: %w", err)
		}
	}
	return Span{
		TraceID:      hex.EncodeToString(p.TraceID[:]),
		SpanID:       hex.EncodeToString(id[:]),
		ParentSpanID: hex.EncodeToString(p.SpanID[:]),
		Flags:        fmt.Sprintf("%02x", p.Flags&Sampled),
		State:        p.State,
	}, nil
}

// Traceparent formats s as the version 00 traceparent a tool receives.
func (s Span) Traceparent() string {
	return "00-" + s.TraceID + "-" + s.SpanID + "-" + s.Flags
}

// parseState checks a tracestate and returns its normal form.
func parseState(s string) (string, error) {
	if len(s) > MaxTracestate {
		return "", tsErr(ReasonLength, "%d bytes, more than %d", len(s), MaxTracestate)
	}
	if s == "" {
		return "", nil
	}
	members := strings.Split(s, ",")
	if len(members) > MaxMembers {
		return "", tsErr(ReasonMembers, "%d list members, more than %d", len(members), MaxMembers)
	}
	seen := map[string]bool{}
	var out []string
	for i, m := range members {
		m = strings.Trim(m, " \t")
		if m == "" {
			continue
		}
		key, value, ok := strings.Cut(m, "=")
		if !ok {
			return "", tsErr(ReasonMember, "list member %d has no \"=\"", i)
		}
		if !validKey(key) {
			return "", tsErr(ReasonKey, "list member %d: key outside the grammar", i)
		}
		if !validValue(value) {
			return "", tsErr(ReasonValue, "list member %d (key %s): value outside the grammar", i, key)
		}
		if seen[key] {
			return "", tsErr(ReasonDuplicate, "key %s is listed twice", key)
		}
		seen[key] = true
		out = append(out, m)
	}
	return strings.Join(out, ","), nil
}

func keyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '*' || c == '/'
}

func validKey(k string) bool {
	tenant, system, multi := strings.Cut(k, "@")
	if !multi {
		return len(k) >= 1 && len(k) <= 256 && k[0] >= 'a' && k[0] <= 'z' && allKeyChars(k)
	}
	return len(tenant) >= 1 && len(tenant) <= 241 && (tenant[0] >= 'a' && tenant[0] <= 'z' || tenant[0] >= '0' && tenant[0] <= '9') &&
		allKeyChars(tenant) && len(system) >= 1 && len(system) <= 14 && system[0] >= 'a' && system[0] <= 'z' && allKeyChars(system)
}

func allKeyChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !keyChar(s[i]) {
			return false
		}
	}
	return true
}

func validValue(v string) bool {
	if len(v) < 1 || len(v) > 256 || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e || c == ',' || c == '=' {
			return false
		}
	}
	return true
}
