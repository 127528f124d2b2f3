// Package trace parses W3C Trace Context (skeleton).
package trace

import "errors"

// Parent is a parsed incoming trace context.
type Parent struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
	State   string
}

// Span is the context a receipt records.
type Span struct {
	TraceID      string `json:"trace_id"`
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id"`
	Flags        string `json:"flags"`
	State        string `json:"tracestate,omitempty"`
}

var errTODO = errors.New("trace: not implemented yet")

// Parse parses a traceparent and tracestate.
func Parse(traceparent, tracestate string) (Parent, error) { return Parent{}, errTODO }

// Child returns a span with a fresh span id.
func (p Parent) Child() (Span, error) { return Span{}, errTODO }

// Traceparent formats s.
func (s Span) Traceparent() string { return "00-" + s.TraceID + "-" + s.SpanID + "-" + s.Flags }
