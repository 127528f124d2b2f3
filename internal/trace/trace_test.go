package trace_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/trace"
)

// The examples of W3C Trace Context level 1, sections 3.2 and 3.3.
const (
	specParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceHex   = "4bf92f3577b34da6a3ce929d0e0e4736"
	spanHex    = "00f067aa0ba902b7"
)

func reason(t *testing.T, err error, header, want string) {
	t.Helper()
	var e *trace.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *trace.Error, want %s", err, err, want)
	}
	if e.Reason != want || e.Header != header {
		t.Fatalf("%s/%s (%v), want %s/%s", e.Header, e.Reason, err, header, want)
	}
}

func TestParseTraceparent(t *testing.T) {
	valid := []struct {
		in    string
		flags byte
	}{
		{specParent, 0x01},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", 0x00},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", 0xff},
		// Future versions: parsed as version 00, the rest after a "-" ignored.
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 0x01},
		{"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be-like", 0x01},
		{"fe-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-", 0x09},
	}
	for _, v := range valid {
		p, err := trace.Parse(v.in, "")
		if err != nil {
			t.Fatalf("%s: %v", v.in, err)
		}
		if p.Flags != v.flags || p.Traceparent()[3:52] != traceHex+"-"+spanHex || p.State != "" {
			t.Fatalf("%s: %+v", v.in, p)
		}
	}
	zeroTrace := "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
	invalid := []struct{ in, reason string }{
		{"", trace.ReasonHex},
		{"0", trace.ReasonHex},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", trace.ReasonVersion},
		{"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", trace.ReasonHex},
		{"0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", trace.ReasonHex},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", trace.ReasonHex},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01", trace.ReasonHex},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A", trace.ReasonHex},
		{"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", trace.ReasonHex},
		{zeroTrace, trace.ReasonZeroTrace},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", trace.ReasonZeroSpan},
		{"cc-00000000000000000000000000000000-00f067aa0ba902b7-01", trace.ReasonZeroTrace},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", trace.ReasonLength},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", trace.ReasonLength},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ", trace.ReasonLength},
		{" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", trace.ReasonHex},
		{"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0", trace.ReasonLength},
		{"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.", trace.ReasonFormat},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", trace.ReasonFormat},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01", trace.ReasonFormat},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01", trace.ReasonFormat},
		{"00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01", trace.ReasonFormat},
		{"cc-" + traceHex + "-" + spanHex + "-01-" + strings.Repeat("x", trace.MaxTraceparent), trace.ReasonLength},
	}
	for _, c := range invalid {
		_, err := trace.Parse(c.in, "")
		reason(t, err, "traceparent", c.reason)
	}
}

func TestParseTracestate(t *testing.T) {
	valid := []struct{ in, norm string }{
		{"congo=t61rcWkgMzE", "congo=t61rcWkgMzE"},
		{"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
		{"congo=ucfJifl5GOE,rojo=00f067aa0ba902b7", "congo=ucfJifl5GOE,rojo=00f067aa0ba902b7"},
		{" rojo=1 ,\tcongo=2\t, ", "rojo=1,congo=2"},
		{"a=1,,b=2", "a=1,b=2"},
		{",", ""},
		{"fw529a3039@dt=abc", "fw529a3039@dt=abc"},
		{"1tenant@sys_-*/=x", "1tenant@sys_-*/=x"},
		{"k=a b", "k=a b"},
		{"k= leading", "k= leading"},
		{"k/*_-0=~!", "k/*_-0=~!"},
		{"k=" + strings.Repeat("v", 256), ""},
		{strings.Repeat("k", 256) + "=v", ""},
		{strings.Repeat("t", 241) + "@" + strings.Repeat("s", 14) + "=v", ""},
	}
	for _, v := range valid {
		p, err := trace.Parse(specParent, v.in)
		if err != nil {
			t.Fatalf("%q: %v", v.in, err)
		}
		if v.norm != "" && p.State != v.norm {
			t.Fatalf("%q normalised to %q, want %q", v.in, p.State, v.norm)
		}
		if again, err := trace.Parse(specParent, p.State); err != nil || again.State != p.State {
			t.Fatalf("normal form %q does not re-parse to itself: %v", p.State, err)
		}
	}
	members := func(n int) string {
		var m []string
		for i := 0; i < n; i++ {
			m = append(m, "k"+strconv.Itoa(i)+"=v")
		}
		return strings.Join(m, ",")
	}
	if _, err := trace.Parse(specParent, members(32)); err != nil {
		t.Fatalf("32 members: %v", err)
	}
	invalid := []struct{ in, reason string }{
		{members(33), trace.ReasonMembers},
		{strings.Repeat(",", 32), trace.ReasonMembers},
		{"k=" + strings.Repeat("v", 511), trace.ReasonLength},
		{"rojo=1,congo=2,rojo=3", trace.ReasonDuplicate},
		{"congo", trace.ReasonMember},
		{"Congo=1", trace.ReasonKey},
		{"1congo=1", trace.ReasonKey},
		{"=1", trace.ReasonKey},
		{"co ngo=1", trace.ReasonKey},
		{"tenant@1sys=1", trace.ReasonKey},
		{"tenant@=1", trace.ReasonKey},
		{"@sys=1", trace.ReasonKey},
		{"a@b@c=1", trace.ReasonKey},
		{"t@" + strings.Repeat("s", 15) + "=v", trace.ReasonKey},
		{strings.Repeat("t", 242) + "@s=v", trace.ReasonKey},
		{strings.Repeat("k", 257) + "=v", trace.ReasonKey},
		{"k\u00e9=1", trace.ReasonKey},
		{"k=", trace.ReasonValue},
		{"k=a=b", trace.ReasonValue},
		{"fw529a3039@dt=aGVsbG8=", trace.ReasonValue}, // "=" is not a value character
		{"k=\u00e9", trace.ReasonValue},
		{"k=a\x00b", trace.ReasonValue},
		{"k=a\x7f", trace.ReasonValue},
		{"k=\t1", trace.ReasonValue},
		{"k=" + strings.Repeat("v", 257), trace.ReasonValue},
	}
	for _, c := range invalid {
		_, err := trace.Parse(specParent, c.in)
		reason(t, err, "tracestate", c.reason)
	}
}

func TestChild(t *testing.T) {
	p, err := trace.Parse("00-"+traceHex+"-"+spanHex+"-ff", "rojo=00f067aa0ba902b7")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		s, err := p.Child()
		if err != nil {
			t.Fatal(err)
		}
		if s.TraceID != traceHex || s.ParentSpanID != spanHex || s.Flags != "01" || s.State != "rojo=00f067aa0ba902b7" {
			t.Fatalf("%+v", s)
		}
		if s.SpanID == "0000000000000000" || s.SpanID == spanHex || seen[s.SpanID] {
			t.Fatalf("span id %s is not fresh", s.SpanID)
		}
		seen[s.SpanID] = true
		q, err := trace.Parse(s.Traceparent(), s.State)
		if err != nil || q.TraceID != p.TraceID || q.Flags != trace.Sampled {
			t.Fatalf("child traceparent %s: %v", s.Traceparent(), err)
		}
	}
	unsampled, _ := trace.Parse("00-"+traceHex+"-"+spanHex+"-02", "")
	if s, _ := unsampled.Child(); s.Flags != "00" {
		t.Fatalf("undefined flag bits propagated: %s", s.Flags)
	}
	if _, err := (trace.Parent{}).Child(); err == nil {
		t.Fatal("a child of no context")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(specParent, "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
	f.Add("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", " a=1 ,,b@c=2")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		p, err := trace.Parse(tp, ts)
		if err != nil {
			var e *trace.Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if strings.HasPrefix(tp, "00-") && p.Traceparent() != tp {
			t.Fatalf("%q formats as %q", tp, p.Traceparent())
		}
		q, err := trace.Parse(p.Traceparent(), p.State)
		if err != nil || q != p {
			t.Fatalf("%q %q: round trip %+v != %+v (%v)", tp, ts, q, p, err)
		}
		s, err := p.Child()
		if err != nil {
			t.Fatal(err)
		}
		c, err := trace.Parse(s.Traceparent(), s.State)
		if err != nil || c.TraceID != p.TraceID || c.State != p.State || c.Flags != p.Flags&trace.Sampled {
			t.Fatalf("child %q: %v", s.Traceparent(), err)
		}
	})
}
