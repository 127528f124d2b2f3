package archive

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"
)

// ustarBlock is a hand-made USTAR header block (archive/tar's writer cannot
// produce the hostile headers below).
func ustarBlock(name string, typeflag byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], "00000000000\x00")
	b[156] = typeflag
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	for i := 148; i < 156; i++ {
		b[i] = ' '
	}
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func pad512(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

func paxRecord(k, v string) string {
	s := " " + k + "=" + v + "\n"
	for n := len(s); ; n++ {
		if len(fmt.Sprint(n))+len(s) == n {
			return fmt.Sprint(n) + s
		}
	}
}

// rawTarGz gzips hand-made tar bytes followed by the two end blocks.
func rawTarGz(blocks ...[]byte) []byte {
	var tarb []byte
	for _, b := range blocks {
		tarb = append(tarb, pad512(b)...)
	}
	tarb = append(tarb, make([]byte, 1024)...)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(tarb)
	zw.Close()
	return buf.Bytes()
}

// TestSparseEntriesRefused: a PAX (GNU.sparse 0.1 / 1.0) or old GNU sparse
// entry is expanded by archive/tar with zero holes that never pass through
// the decompressor, so a few hundred bytes would become a 64 MiB file past
// the ratio bound, and a reader that ignores sparse maps sees other bytes
// than the verifier hashed. Bundles hold plain USTAR files only.
func TestSparseEntriesRefused(t *testing.T) {
	const real = 64 << 20
	data := "hello"
	pax01 := paxRecord("GNU.sparse.major", "0") + paxRecord("GNU.sparse.minor", "1") +
		paxRecord("GNU.sparse.size", fmt.Sprint(real)) + paxRecord("GNU.sparse.numblocks", "1") +
		paxRecord("GNU.sparse.map", "0,5") + paxRecord("GNU.sparse.name", "run.json")
	sparse01 := rawTarGz(ustarBlock("PaxHeaders/x", 'x', int64(len(pax01))), []byte(pax01),
		ustarBlock("x", '0', int64(len(data))), []byte(data))

	pax10 := paxRecord("GNU.sparse.major", "1") + paxRecord("GNU.sparse.minor", "0") +
		paxRecord("GNU.sparse.realsize", fmt.Sprint(real)) + paxRecord("GNU.sparse.name", "run.json")
	body := pad512([]byte("1\n0\n5\n"))
	body = append(body, data...)
	sparse10 := rawTarGz(ustarBlock("PaxHeaders/x", 'x', int64(len(pax10))), []byte(pax10),
		ustarBlock("x", '0', int64(len(body))), body)

	for name, in := range map[string][]byte{"pax sparse 0.1": sparse01, "pax sparse 1.0": sparse10} {
		t.Run(name, func(t *testing.T) {
			files, err := Read(bytes.NewReader(in), DefaultLimits)
			if err == nil {
				t.Fatalf("accepted %d compressed bytes as %q of %d bytes", len(in), files[0].Name, files[0].Size)
			}
			if kindOf(err) != ErrUnsafe {
				t.Fatalf("got %v, want archive-unsafe", err)
			}
		})
	}
}
