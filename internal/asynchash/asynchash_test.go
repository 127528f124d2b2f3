package asynchash

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

// A Writer's Sum is SHA-256 of exactly the bytes written, in order,
// whatever the sizes of the writes: empty, one byte, around its block
// size, many blocks at once.
func TestWriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5*block+123)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for name, sizes := range map[string][]int{
		"nothing":        nil,
		"one byte":       {1},
		"one block":      {block},
		"block plus one": {block + 1},
		"small writes":   {7, 1, 0, 4096, 13, block - 1, 2, 65535},
		"all at once":    {len(data)},
	} {
		a := New(sha256.New())
		var written []byte
		off := 0
		for i := 0; off < len(data) && (i < len(sizes) || name == "small writes"); i++ {
			n := min(sizes[i%len(sizes)], len(data)-off)
			a.Write(data[off : off+n])
			written = append(written, data[off:off+n]...)
			off += n
		}
		want := sha256.Sum256(written)
		if got := a.Sum(); !bytes.Equal(got, want[:]) {
			t.Errorf("%s: sum %x, want %x", name, got, want)
		}
		if got := a.Sum(); !bytes.Equal(got, want[:]) {
			t.Errorf("%s: a second sum differs", name)
		}
	}
}
