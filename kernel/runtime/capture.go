package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"sync"
)

// ErrOutputLimit is returned by Capture.Write once a stream exceeded its cap.
var ErrOutputLimit = errors.New("output limit exceeded")

// Capture is one captured output stream with a byte cap. It keeps the first
// Limit bytes (exactly), hashes them, and when more arrive marks the stream
// truncated, closes Full and fails every later write with ErrOutputLimit.
type Capture struct {
	mu        sync.Mutex
	sink      io.Writer
	limit     int64
	n         int64
	h         hash.Hash
	truncated bool
	err       error
	full      chan struct{}
}

// NewCapture returns a Capture writing at most limit bytes into sink.
// A limit <= 0 means no cap.
func NewCapture(sink io.Writer, limit int64) *Capture {
	return &Capture{sink: sink, limit: limit, h: sha256.New(), full: make(chan struct{})}
}

// Write stores what fits under the cap. When p crosses the cap, the part that
// fits is stored and Write returns ErrOutputLimit.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.truncated {
		return 0, ErrOutputLimit
	}
	if c.err != nil {
		return 0, c.err
	}
	keep := p
	over := false
	if c.limit > 0 && c.n+int64(len(p)) > c.limit {
		keep = p[:c.limit-c.n]
		over = true
	}
	if len(keep) > 0 {
		n, err := c.sink.Write(keep)
		if n < 0 || n > len(keep) {
			n = 0
		}
		// Account for what the sink took, so Stream describes the sink.
		c.h.Write(keep[:n])
		c.n += int64(n)
		if err == nil && n < len(keep) {
			err = io.ErrShortWrite
		}
		if err != nil {
			c.err = err
			return n, err
		}
	}
	if over {
		c.truncated = true
		close(c.full)
		return len(keep), ErrOutputLimit
	}
	return len(p), nil
}

// Len is the number of bytes kept so far; it is safe to call while the
// stream is being written.
func (c *Capture) Len() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Full is closed when the stream went over its cap.
func (c *Capture) Full() <-chan struct{} { return c.full }

// Stream summarises what was kept.
func (c *Capture) Stream() Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stream{Digest: "sha256:" + hex.EncodeToString(c.h.Sum(nil)), Size: c.n, Truncated: c.truncated}
}

// Err reports a failure of the sink (not an overflow).
func (c *Capture) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stream is the evidence of one captured stream.
type Stream struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
}
