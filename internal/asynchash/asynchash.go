// Package asynchash hashes a stream on a goroutine of its own, so that
// hashing it overlaps the work that produces or consumes it: bundle export
// hashes every blob as it reads it and the archive as it writes it, bundle
// verify every member as it reads it and the file as a whole; on one core
// each second hash cost a third or more of the command.
package asynchash

import "hash"

// block is how many bytes a Writer hands over at a time.
const block = 256 << 10

// A Writer hashes what is written to it with h, on its own goroutine.
// Sum must be called once writing is done (also on a failure path: it
// ends the goroutine).
type Writer struct {
	h    hash.Hash
	buf  []byte
	ch   chan []byte
	free chan []byte
	done chan struct{}
	out  []byte
}

// New returns a Writer hashing with h.
func New(h hash.Hash) *Writer {
	w := &Writer{h: h, buf: make([]byte, 0, block), ch: make(chan []byte, 4), free: make(chan []byte, 5), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for b := range w.ch {
			w.h.Write(b)
			select {
			case w.free <- b[:0]:
			default: // enough spare buffers: let this one go
			}
		}
	}()
	return w
}

// Write copies p for hashing; it never fails. It must not be called
// after Sum.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), cap(w.buf)-len(w.buf))
		w.buf, p = append(w.buf, p[:k]...), p[k:]
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
	}
	return n, nil
}

func (w *Writer) flush() {
	w.ch <- w.buf
	select {
	case w.buf = <-w.free:
	default:
		w.buf = make([]byte, 0, block)
	}
}

// Sum waits for the hash of everything written and returns it. It ends
// the goroutine; later calls return the same sum.
func (w *Writer) Sum() []byte {
	if w.out == nil {
		if len(w.buf) > 0 {
			w.ch <- w.buf
		}
		close(w.ch)
		<-w.done
		w.out = w.h.Sum(nil)
	}
	return w.out
}
