package input_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/proofgate/proofgate/kernel/input"
)

// memPutter is a Putter that is not internal/blob: a map, with a lie switch
// that makes every existing blob report a digest mismatch.
type memPutter struct {
	m   map[string][]byte
	err error
}

func (p *memPutter) PutMany(digests []string, bs [][]byte) (int64, error) {
	var n int64
	for i, d := range digests {
		if _, ok := p.m[d]; ok {
			if p.err != nil {
				return n, fmt.Errorf("put %s: %w", d, p.err)
			}
			continue
		}
		p.m[d] = bs[i]
		n += int64(len(bs[i]))
	}
	return n, nil
}

func (p *memPutter) get(d string) ([]byte, error) {
	b, ok := p.m[d]
	if !ok {
		return nil, errors.New("no such blob")
	}
	return b, nil
}

type mismatch struct{}

func (mismatch) Error() string        { return "content does not match its digest" }
func (mismatch) DigestMismatch() bool { return true }

// Store writes through any Putter and Rebuild reads back what it wrote; a
// Putter's mismatch error (recognised by its DigestMismatch method, not by
// internal/blob's identity) is ReasonDigest, any other error is not.
func TestStoreThroughPutter(t *testing.T) {
	p := &memPutter{m: map[string][]byte{}}
	st, err := input.Store(p, []byte(vecCanonical))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Manifest || st.Ref != vecManifestD || st.Hash != vecHash || len(p.m) != 6 {
		t.Fatalf("stored %+v, %d blobs", st, len(p.m))
	}
	c, read, err := input.Rebuild(p.get, st.Ref)
	if err != nil || string(c) != vecCanonical || len(read) != 6 {
		t.Fatalf("rebuild: %s %v %v", c, read, err)
	}
	again, err := input.Store(p, []byte(vecCanonical))
	if err != nil || again.Written != 0 {
		t.Fatalf("second store wrote %d: %v", again.Written, err)
	}
	p.err = mismatch{}
	_, err = input.Store(p, []byte(vecCanonical))
	reason(t, err, input.ReasonDigest)
	p.err = errors.New("disk full")
	_, err = input.Store(p, []byte(vecCanonical))
	var ie *input.Error
	if err == nil || errors.As(err, &ie) {
		t.Fatalf("an I/O error became %v", err)
	}
	_, _, err = input.Rebuild(func(string) ([]byte, error) { return nil, fmt.Errorf("read: %w", mismatch{}) }, vecManifestD)
	reason(t, err, input.ReasonDigest)
}
