package runtime_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/proofgate/proofgate/kernel/runtime"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func isFull(c *runtime.Capture) bool {
	select {
	case <-c.Full():
		return true
	default:
		return false
	}
}

func TestCaptureExactlyAtCapIsNotTruncated(t *testing.T) {
	var sink bytes.Buffer
	c := runtime.NewCapture(&sink, 10)
	n, err := c.Write([]byte("0123456789"))
	if n != 10 || err != nil {
		t.Fatalf("write at cap: %d, %v", n, err)
	}
	// An empty write at the cap does not overflow either.
	if n, err := c.Write(nil); n != 0 || err != nil {
		t.Fatalf("empty write at cap: %d, %v", n, err)
	}
	st := c.Stream()
	if st.Truncated || st.Size != 10 || isFull(c) || st.Digest != digest([]byte("0123456789")) {
		t.Fatalf("at cap: %+v full=%v", st, isFull(c))
	}
	// The next byte overflows without storing anything.
	n, err = c.Write([]byte("x"))
	if n != 0 || !errors.Is(err, runtime.ErrOutputLimit) {
		t.Fatalf("write past cap: %d, %v", n, err)
	}
	if st := c.Stream(); !st.Truncated || st.Size != 10 || !isFull(c) || sink.String() != "0123456789" {
		t.Fatalf("past cap: %+v sink %q", st, sink.String())
	}
}

func TestCaptureOneOverCapTruncates(t *testing.T) {
	var sink bytes.Buffer
	c := runtime.NewCapture(&sink, 10)
	n, err := c.Write([]byte("0123456789A"))
	if n != 10 || !errors.Is(err, runtime.ErrOutputLimit) {
		t.Fatalf("write: %d, %v", n, err)
	}
	st := c.Stream()
	if !st.Truncated || st.Size != 10 || sink.String() != "0123456789" || st.Digest != digest([]byte("0123456789")) || !isFull(c) {
		t.Fatalf("%+v sink %q", st, sink.String())
	}
	if c.Err() != nil {
		t.Fatalf("overflow reported as sink error: %v", c.Err())
	}
}

func TestCaptureWritesStraddlingCap(t *testing.T) {
	var sink bytes.Buffer
	c := runtime.NewCapture(&sink, 10)
	for i, w := range []struct {
		p    string
		n    int
		over bool
	}{{"abc", 3, false}, {"def", 3, false}, {"ghi", 3, false}, {"jkl", 1, true}, {"mno", 0, true}, {"", 0, true}} {
		n, err := c.Write([]byte(w.p))
		if n != w.n || errors.Is(err, runtime.ErrOutputLimit) != w.over || (!w.over && err != nil) {
			t.Fatalf("write %d %q: %d, %v", i, w.p, n, err)
		}
	}
	st := c.Stream()
	if sink.String() != "abcdefghij" || st.Size != 10 || !st.Truncated || st.Digest != digest([]byte("abcdefghij")) {
		t.Fatalf("%+v sink %q", st, sink.String())
	}
}

func TestCaptureNoCap(t *testing.T) {
	for _, limit := range []int64{0, -1} {
		var sink bytes.Buffer
		c := runtime.NewCapture(&sink, limit)
		big := bytes.Repeat([]byte("z"), 3<<20)
		if n, err := c.Write(big); n != len(big) || err != nil {
			t.Fatalf("limit %d: %d, %v", limit, n, err)
		}
		if st := c.Stream(); st.Truncated || st.Size != int64(len(big)) || st.Digest != digest(big) || isFull(c) {
			t.Fatalf("limit %d: %+v", limit, st)
		}
	}
}

func TestCaptureEmptyDigest(t *testing.T) {
	c := runtime.NewCapture(io.Discard, 5)
	if st := c.Stream(); st.Size != 0 || st.Truncated || st.Digest != digest(nil) {
		t.Fatalf("%+v", st)
	}
}

// shortSink accepts at most room bytes and then fails.
type shortSink struct {
	bytes.Buffer
	room int
}

func (s *shortSink) Write(p []byte) (int, error) {
	if len(p) <= s.room {
		s.room -= len(p)
		return s.Buffer.Write(p)
	}
	n, _ := s.Buffer.Write(p[:s.room])
	s.room = 0
	return n, errors.New("no space left on device")
}

func TestCaptureSinkFailure(t *testing.T) {
	sink := &shortSink{room: 4}
	c := runtime.NewCapture(sink, 100)
	if _, err := c.Write([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	n, err := c.Write([]byte("cdef"))
	if n != 2 || err == nil || errors.Is(err, runtime.ErrOutputLimit) {
		t.Fatalf("failing write: %d, %v", n, err)
	}
	if c.Err() == nil {
		t.Fatal("Err is nil after a sink failure")
	}
	if _, err := c.Write([]byte("g")); err == nil {
		t.Fatal("write after sink failure succeeded")
	}
	// Stream describes exactly what the sink holds.
	st := c.Stream()
	if st.Size != 4 || st.Digest != digest(sink.Bytes()) || sink.String() != "abcd" || st.Truncated {
		t.Fatalf("%+v sink %q", st, sink.String())
	}
}

func TestCaptureConcurrentWrites(t *testing.T) {
	var sink bytes.Buffer
	const limit = 1000
	c := runtime.NewCapture(&sink, limit)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Write([]byte("0123456"))
			}
		}()
	}
	wg.Wait()
	st := c.Stream()
	if st.Size != limit || sink.Len() != limit || !st.Truncated || st.Digest != digest(sink.Bytes()) {
		t.Fatalf("%+v sink %d", st, sink.Len())
	}
}

// FuzzCapture checks Capture against a model: for any chunking and cap, the
// sink holds exactly the first min(total, cap) bytes, the digest is theirs,
// and the stream is truncated iff more than the cap arrived.
func FuzzCapture(f *testing.F) {
	f.Add([]byte("hello world"), uint8(3), int64(5))
	f.Add([]byte("0123456789"), uint8(10), int64(10))
	f.Add([]byte("0123456789A"), uint8(1), int64(10))
	f.Add([]byte{}, uint8(0), int64(0))
	f.Add([]byte("abc"), uint8(7), int64(-3))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, limit int64) {
		if len(data) > 1<<16 {
			return
		}
		limit %= 1 << 17
		var sink bytes.Buffer
		c := runtime.NewCapture(&sink, limit)
		step := int(chunk)%17 + 1
		for i := 0; i < len(data); i += step {
			end := min(i+step, len(data))
			before := c.Stream().Size
			n, err := c.Write(data[i:end])
			if err != nil && !errors.Is(err, runtime.ErrOutputLimit) {
				t.Fatalf("unexpected error %v", err)
			}
			if int64(n) != c.Stream().Size-before {
				t.Fatalf("Write returned %d but stored %d", n, c.Stream().Size-before)
			}
		}
		keep := data
		over := limit > 0 && int64(len(data)) > limit
		if over {
			keep = data[:limit]
		}
		st := c.Stream()
		if !bytes.Equal(sink.Bytes(), keep) || st.Size != int64(len(keep)) || st.Truncated != over || st.Digest != digest(keep) || isFull(c) != over {
			t.Fatalf("limit %d len %d: %+v sink %d full %v", limit, len(data), st, sink.Len(), isFull(c))
		}
	})
}
