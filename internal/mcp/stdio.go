package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport of `proofgate mcp`: newline-delimited JSON-RPC
// on in and out, as sdk.IOTransport, except that the end of in reaches
// the SDK only once every request read before it is answered. The SDK
// stops writing (and cancels what is queued) as soon as its reader sees
// the end, so a client that writes its requests and closes stdin at once
// (printf '...' | proofgate mcp) got no answer at all, and its calls never
// ran. A request is a JSON-RPC object with a method and a string or
// number id; it is answered by an object with that id and no method.
// Closing the transport (SIGTERM, the SDK giving up on bad input) ends
// the wait.
func Stdio(in io.Reader, out io.Writer) sdk.Transport {
	l := &ledger{pending: map[string]bool{}}
	l.cond = sync.NewCond(&l.mu)
	return &sdk.IOTransport{
		Reader:        &heldReader{r: in, l: l},
		Writer:        &countingWriter{w: out, l: l},
		MaxLineLength: MaxFrame,
	}
}

// ledger holds the ids of the requests passed to the SDK and not yet
// answered. A set, not a count: an id repeated while in flight is
// answered once (the SDK refuses the second without its id).
type ledger struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]bool
	closed  bool
}

func (l *ledger) mark(frame []byte, request bool) {
	keys := frameIDs(frame, request)
	if len(keys) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if request {
			l.pending[k] = true
		} else {
			delete(l.pending, k)
		}
	}
	l.cond.Broadcast()
}

// wait returns once nothing is pending or the transport is closed.
func (l *ledger) wait() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.pending) > 0 && !l.closed {
		l.cond.Wait()
	}
}

func (l *ledger) close() {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
}

// frameIDs returns the ids of the requests (request) or of the responses
// in one JSON-RPC frame: an object or a batch array. It decodes with
// encoding/json on purpose, not the strict decoder: nothing is decided
// from it but when end-of-input is passed on to the SDK (which parses
// every frame itself). A frame it reads differently from the SDK (a
// case-variant or duplicate "id") only holds end-of-input until the
// transport closes; it cannot make a call run or be recorded.
func frameIDs(frame []byte, request bool) []string {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	var msgs []msg
	frame = bytes.TrimSpace(frame)
	if len(frame) > 0 && frame[0] == '[' {
		if json.Unmarshal(frame, &msgs) != nil {
			return nil
		}
	} else {
		var m msg
		if json.Unmarshal(frame, &m) != nil {
			return nil
		}
		msgs = []msg{m}
	}
	var keys []string
	for _, m := range msgs {
		if k := idKey(m.ID); k != "" && (m.Method != nil) == request {
			keys = append(keys, k)
		}
	}
	return keys
}

// idKey is a JSON-RPC id as the SDK echoes it: a string, or an integer;
// "" for no id (a notification) or one the SDK does not answer by.
func idKey(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "s:" + s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return ""
	}
	if i, err := n.Int64(); err == nil {
		return "n:" + strconv.FormatInt(i, 10)
	}
	return ""
}

// heldReader passes in through unchanged, splitting it into top-level
// JSON values on the way to record the requests, and holds back the end
// of in until the ledger is empty.
type heldReader struct {
	r     io.Reader
	l     *ledger
	split splitter
}

func (h *heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	for _, f := range h.split.feed(p[:n]) {
		h.l.mark(f, true)
	}
	if err == io.EOF && n > 0 {
		return n, nil // the end comes with the next Read, after the wait
	}
	if err == io.EOF {
		h.l.wait()
	}
	return n, err
}

func (h *heldReader) Close() error {
	h.l.close()
	if c, ok := h.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// countingWriter writes the SDK's frames to w (one message, or one batch,
// per Write) and records the answers among them.
type countingWriter struct {
	w io.Writer
	l *ledger
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.l.close() // no answer can reach the client any more
		return n, err
	}
	c.l.mark(p, false)
	return n, nil
}

func (c *countingWriter) Close() error { return nil }

// splitter cuts a byte stream into top-level JSON objects and arrays,
// tracking strings and escapes; bytes between values are skipped. A value
// longer than MaxFrame is dropped (the SDK refuses it and closes).
type splitter struct {
	buf      []byte
	depth    int
	inString bool
	escaped  bool
	dropping bool
}

func (s *splitter) feed(b []byte) [][]byte {
	var out [][]byte
	for _, c := range b {
		if s.depth == 0 && c != '{' && c != '[' {
			continue
		}
		if !s.dropping {
			s.buf = append(s.buf, c)
			if len(s.buf) > MaxFrame {
				s.buf, s.dropping = nil, true
			}
		}
		if s.step(c) {
			if !s.dropping {
				out = append(out, s.buf)
			}
			s.buf, s.dropping = nil, false
		}
	}
	return out
}

// step advances the state by c and says whether a top-level value ended.
func (s *splitter) step(c byte) bool {
	switch {
	case s.inString && s.escaped:
		s.escaped = false
	case s.inString && c == '\\':
		s.escaped = true
	case s.inString:
		s.inString = c != '"'
	case c == '"':
		s.inString = true
	case c == '{' || c == '[':
		s.depth++
	case c == '}' || c == ']':
		s.depth--
		return s.depth == 0
	}
	return false
}
