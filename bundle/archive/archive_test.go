package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
)

type raw struct {
	hdr  tar.Header
	data string
}

// build writes arbitrary (hostile) tar headers into a gzip stream.
func build(t testing.TB, entries []raw) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.hdr
		if h.Size == 0 && h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			h.Mode = 0
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if e.data != "" {
			if _, err := tw.Write([]byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func reg(name, data string) raw {
	return raw{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg}, data: data}
}

func good(t testing.TB) []byte {
	var buf bytes.Buffer
	if err := Write(&buf, []Entry{BytesEntry("b.txt", []byte("bee")), BytesEntry("a/x.txt", []byte("ay"))}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTripDeterministic(t *testing.T) {
	a, b := good(t), good(t)
	if !bytes.Equal(a, b) {
		t.Fatal("two writes differ")
	}
	files, err := Read(bytes.NewReader(a), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Name != "a/x.txt" || string(files[1].Data) != "bee" {
		t.Fatalf("files %+v", files)
	}
	// Fixed headers: mtime 0, uid 0, no owner names, mode 0644.
	zr, _ := gzip.NewReader(bytes.NewReader(a))
	if zr.Header.Name != "" || !zr.Header.ModTime.IsZero() && zr.Header.ModTime.Unix() != 0 || zr.Header.OS != 255 {
		t.Fatalf("gzip header %+v", zr.Header)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if h.ModTime.Unix() != 0 || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.Mode != 0o644 {
			t.Fatalf("header %+v", h)
		}
	}
}

func kindOf(err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Kind
	}
	return nil
}

func TestHostileArchives(t *testing.T) {
	twoGiB := func() []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		tw.WriteHeader(&tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: 2 << 30, Mode: 0o644})
		tw.Flush()
		zw.Write(make([]byte, 1024))
		zw.Close()
		return buf.Bytes()
	}()
	g := good(t)
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"dotdot", build(t, []raw{reg("../x", "x")}), ErrUnsafe},
		{"inner dotdot", build(t, []raw{reg("a/../../x", "x")}), ErrUnsafe},
		{"absolute", build(t, []raw{reg("/etc/x", "x")}), ErrUnsafe},
		{"dot segment", build(t, []raw{reg("./x", "x")}), ErrUnsafe},
		{"backslash", build(t, []raw{reg(`a\..\x`, "x")}), ErrUnsafe},
		{"symlink", build(t, []raw{{hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}}), ErrUnsafe},
		{"hardlink", build(t, []raw{reg("a", "x"), {hdr: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "a"}}}), ErrUnsafe},
		{"char device", build(t, []raw{{hdr: tar.Header{Name: "d", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}}), ErrUnsafe},
		{"block device", build(t, []raw{{hdr: tar.Header{Name: "d", Typeflag: tar.TypeBlock}}}), ErrUnsafe},
		{"fifo", build(t, []raw{{hdr: tar.Header{Name: "f", Typeflag: tar.TypeFifo}}}), ErrUnsafe},
		{"directory", build(t, []raw{{hdr: tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}}}), ErrUnsafe},
		{"duplicate", build(t, []raw{reg("a", "1"), reg("a", "2")}), ErrUnsafe},
		{"2 GiB entry", twoGiB, ErrTooLarge},
		{"truncated", g[:len(g)/2], ErrMalformed},
		{"truncated trailer", g[:len(g)-4], ErrMalformed},
		{"not gzip", []byte("plain text"), ErrMalformed},
		{"empty", nil, ErrMalformed},
		{"trailing garbage", append(append([]byte{}, g...), "junk"...), ErrMalformed},
		{"second gzip member", append(append([]byte{}, g...), g...), ErrMalformed},
		{"pax global header", build(t, []raw{{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"path": "x"}}}}), ErrUnsafe},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.in), DefaultLimits)
			if got := kindOf(err); got != c.want {
				t.Fatalf("got %v (%v), want %v", got, err, c.want)
			}
		})
	}
}

func TestEntryAndTotalLimits(t *testing.T) {
	lim := DefaultLimits
	lim.MaxEntrySize, lim.MaxTotalSize, lim.MaxEntries = 10, 15, 2
	if _, err := Read(bytes.NewReader(build(t, []raw{reg("a", strings.Repeat("x", 11))})), lim); kindOf(err) != ErrTooLarge {
		t.Fatalf("entry: %v", err)
	}
	if _, err := Read(bytes.NewReader(build(t, []raw{reg("a", "0123456789"), reg("b", "0123456789")})), lim); kindOf(err) != ErrTooLarge {
		t.Fatalf("total: %v", err)
	}
	if _, err := Read(bytes.NewReader(build(t, []raw{reg("a", "1"), reg("b", "2"), reg("c", "3")})), lim); kindOf(err) != ErrTooLarge {
		t.Fatalf("count: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestGzipBomb: 64 MiB of zeros (under the entry bound) compress to
// about 64 KiB; the ratio check stops reading after about 1 MiB.
func TestGzipBomb(t *testing.T) {
	const size = 64 << 20
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Size: size, Mode: 0o644})
	io.CopyN(tw, zeros{}, size)
	tw.Close()
	zw.Close()
	_, err := Read(bytes.NewReader(buf.Bytes()), DefaultLimits)
	if kindOf(err) != ErrTooLarge || !strings.Contains(err.Error(), "ratio") {
		t.Fatalf("bomb (%d compressed bytes): %v", buf.Len(), err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(good(f))
	f.Add(build(f, []raw{reg("../x", "x")}))
	f.Add(build(f, []raw{{hdr: tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "x"}}}))
	lim := Limits{MaxEntries: 16, MaxEntrySize: 1 << 16, MaxTotalSize: 1 << 17, MaxRatio: 50, RatioSlack: 1 << 12}
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := Read(bytes.NewReader(b), lim)
		if err != nil {
			if kindOf(err) == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var total int
		for _, fl := range files {
			if CheckName(fl.Name) != nil {
				t.Fatalf("unsafe name accepted: %q", fl.Name)
			}
			total += len(fl.Data)
		}
		if total > 1<<17 {
			t.Fatal("limit exceeded")
		}
	})
}
