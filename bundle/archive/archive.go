// Package archive writes the evidence bundle's deterministic .tar.gz and
// reads untrusted ones within fixed bounds.
//
// Writing: entries sorted by name, each a regular file in USTAR format with
// mode 0644, uid/gid 0, empty owner names and mtime 0; the gzip header has
// no name, mtime 0 and OS 255, and the deflate stream uses stored blocks
// (gzip.NoCompression), so the same files always give the same bytes and
// export costs no more than a copy (artifact upload compresses anyway).
//
// Reading: only regular files; absolute paths, "..", ".", empty or
// backslashed segments, links, devices, directories, sparse entries and
// duplicate names are refused (ErrUnsafe); an entry or total above the bounds, too many
// entries, or a decompression ratio bomb is refused (ErrTooLarge); a
// truncated or corrupt stream or trailing data is ErrMalformed.
package archive

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"
)

// Level is the deflate level of every bundle: stored blocks.
const Level = gzip.NoCompression

// Errors a hostile archive is refused with; Read wraps them in *Error.
var (
	ErrUnsafe    = errors.New("archive-unsafe")
	ErrTooLarge  = errors.New("archive-too-large")
	ErrMalformed = errors.New("malformed")
)

// Error names the refused entry.
type Error struct {
	Kind   error // ErrUnsafe, ErrTooLarge or ErrMalformed
	Entry  string
	Detail string
}

func (e *Error) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("archive: %s: %s", e.Kind, e.Detail)
	}
	return fmt.Sprintf("archive entry %q: %s: %s", e.Entry, e.Kind, e.Detail)
}

func (e *Error) Unwrap() error { return e.Kind }

// Entry is one file to write.
type Entry struct {
	Name string
	Size int64
	// Open returns the content; exactly Size bytes are read, then Close is
	// called and its error fails the write (a digest check can live there).
	Open func() (io.ReadCloser, error)
}

// BytesEntry returns an Entry for in-memory content.
func BytesEntry(name string, b []byte) Entry {
	return Entry{Name: name, Size: int64(len(b)), Open: func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(string(b))), nil
	}}
}

// Write writes entries as a deterministic .tar.gz to w.
func Write(w io.Writer, entries []Entry) error {
	es := append([]Entry(nil), entries...)
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	for i, e := range es {
		if err := CheckName(e.Name); err != nil {
			return err
		}
		if i > 0 && es[i-1].Name == e.Name {
			return fmt.Errorf("archive: duplicate entry %q", e.Name)
		}
	}
	zw, err := gzip.NewWriterLevel(w, Level)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	// gzip.Writer's zero Header is already deterministic (no name, mtime
	// 0, OS 255); set it explicitly so that stays true.
	zw.Header = gzip.Header{OS: 255}
	tw := tar.NewWriter(zw)
	for _, e := range es {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     e.Name,
			Size:     e.Size,
			Mode:     0o644,
			Format:   tar.FormatUSTAR,
		}
		hdr.ModTime = epoch
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("archive entry %q: %w", e.Name, err)
		}
		rc, err := e.Open()
		if err != nil {
			return fmt.Errorf("archive entry %q: %w", e.Name, err)
		}
		n, err := io.Copy(tw, io.LimitReader(rc, e.Size))
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("archive entry %q: %w", e.Name, err)
		}
		if n != e.Size {
			return fmt.Errorf("archive entry %q: read %d bytes, want %d", e.Name, n, e.Size)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// CheckName refuses a name that is not a clean relative slash path.
func CheckName(name string) error {
	bad := func(d string) error { return &Error{Kind: ErrUnsafe, Entry: name, Detail: d} }
	switch {
	case name == "":
		return bad("empty name")
	case len(name) > 255:
		return bad("name longer than 255 bytes")
	case strings.HasPrefix(name, "/"):
		return bad("absolute path")
	case strings.ContainsAny(name, "\\\x00"):
		return bad("backslash or NUL in name")
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "..":
			return bad("path escapes with ..")
		case ".", "":
			return bad("non-canonical path")
		}
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return bad("control character in name")
		}
	}
	if !fs.ValidPath(name) {
		return bad("invalid path")
	}
	return nil
}

// Limits bound what Read accepts.
type Limits struct {
	MaxEntries   int
	MaxEntrySize int64
	MaxTotalSize int64
	// MaxRatio bounds uncompressed/compressed bytes once more than
	// RatioSlack bytes were decompressed.
	MaxRatio   int64
	RatioSlack int64
}

// DefaultLimits are the bounds of bundle verify.
var DefaultLimits = Limits{
	MaxEntries:   10000,
	MaxEntrySize: 1 << 30,
	MaxTotalSize: 1 << 30,
	MaxRatio:     200,
	RatioSlack:   1 << 20,
}

// File is one regular file read from an archive.
type File struct {
	Name   string
	Size   int64
	SHA256 [32]byte // of the content, computed while reading
	Data   []byte   // nil when the caller did not keep the content
}

// Read reads an untrusted .tar.gz within lim and keeps every file's
// content in memory. Files are returned in archive order.
func Read(r io.Reader, lim Limits) ([]File, error) {
	return ReadKeep(r, lim, nil)
}

// ReadKeep is Read, keeping the content only of the files for which keep
// returns true (all when keep is nil); the others are only hashed, so
// their size costs no memory.
func ReadKeep(r io.Reader, lim Limits, keep func(name string) bool) ([]File, error) {
	if keep == nil {
		return ReadKeepSized(r, lim, nil)
	}
	return ReadKeepSized(r, lim, func(name string, _ int64) bool { return keep(name) })
}

// ReadKeepSized is ReadKeep with the entry's declared size (already checked
// against lim) passed to keep, for a caller that holds only small files.
func ReadKeepSized(r io.Reader, lim Limits, keep func(name string, size int64) bool) ([]File, error) {
	raw := &countingReader{r: r}
	br := bufio.NewReader(raw)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, &Error{Kind: ErrMalformed, Detail: "not a gzip stream: " + err.Error()}
	}
	zr.Multistream(false)
	out := &countingReader{r: zr}
	bomb := func() error {
		if out.n > lim.RatioSlack && out.n > lim.MaxRatio*max(raw.n, 1) {
			return &Error{Kind: ErrTooLarge, Detail: fmt.Sprintf("decompression ratio above %d:1 (%d bytes from %d)", lim.MaxRatio, out.n, raw.n)}
		}
		return nil
	}
	tr := tar.NewReader(&ratioReader{c: out, check: bomb})
	var (
		files []File
		seen  = map[string]bool{}
		total int64
	)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, wrapRead(err, "")
		}
		name := hdr.Name
		if err := checkEntry(hdr); err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, &Error{Kind: ErrUnsafe, Entry: name, Detail: "duplicate entry"}
		}
		seen[name] = true
		if err := checkSize(hdr, len(files), total, lim); err != nil {
			return nil, err
		}
		total += hdr.Size
		f, err := readFile(tr, hdr, keep == nil || keep(name, hdr.Size))
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if err := checkTrailer(out, br); err != nil {
		return nil, err
	}
	return files, nil
}

// checkEntry refuses an entry whose name is unsafe or that is not a plain
// regular file.
func checkEntry(hdr *tar.Header) error {
	name := hdr.Name
	if err := CheckName(name); err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
	case tar.TypeSymlink, tar.TypeLink:
		return &Error{Kind: ErrUnsafe, Entry: name, Detail: "link entry"}
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return &Error{Kind: ErrUnsafe, Entry: name, Detail: "device or fifo entry"}
	default:
		return &Error{Kind: ErrUnsafe, Entry: name, Detail: fmt.Sprintf("entry type %q is not a regular file", hdr.Typeflag)}
	}
	for k := range hdr.PAXRecords {
		// archive/tar expands GNU sparse entries with zero holes that
		// never pass through the decompressor (past the ratio bound),
		// and readers that ignore the map see other bytes.
		if strings.HasPrefix(k, "GNU.sparse.") {
			return &Error{Kind: ErrUnsafe, Entry: name, Detail: "sparse entry"}
		}
	}
	return nil
}

// checkSize refuses an entry past the entry count, entry size or total size
// limits, given the entries and bytes read before it.
func checkSize(hdr *tar.Header, entries int, total int64, lim Limits) error {
	name := hdr.Name
	if entries >= lim.MaxEntries {
		return &Error{Kind: ErrTooLarge, Entry: name, Detail: fmt.Sprintf("more than %d entries", lim.MaxEntries)}
	}
	if hdr.Size < 0 || hdr.Size > lim.MaxEntrySize {
		return &Error{Kind: ErrTooLarge, Entry: name, Detail: fmt.Sprintf("declares %d bytes, limit %d", hdr.Size, lim.MaxEntrySize)}
	}
	if total+hdr.Size > lim.MaxTotalSize {
		return &Error{Kind: ErrTooLarge, Entry: name, Detail: fmt.Sprintf("total above %d bytes", lim.MaxTotalSize)}
	}
	return nil
}

// readFile reads the current entry of tr, hashing it and keeping its
// content when keep says so.
func readFile(tr *tar.Reader, hdr *tar.Header, keep bool) (File, error) {
	h := sha256.New()
	f := File{Name: hdr.Name, Size: hdr.Size}
	if keep {
		data, err := readEntry(io.TeeReader(tr, h), hdr.Size)
		if err != nil {
			return File{}, wrapRead(err, hdr.Name)
		}
		f.Data = data
	} else {
		n, err := io.Copy(h, tr)
		if err == nil && n != hdr.Size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return File{}, wrapRead(err, hdr.Name)
		}
	}
	h.Sum(f.SHA256[:0])
	return f, nil
}

// checkTrailer refuses anything past the end-of-archive blocks but zero
// padding (at most 1 MiB), then the gzip trailer, then nothing.
func checkTrailer(out io.Reader, br *bufio.Reader) error {
	pad := make([]byte, 4096)
	var padded int64
	for {
		n, err := out.Read(pad)
		for _, b := range pad[:n] {
			if b != 0 {
				return &Error{Kind: ErrMalformed, Detail: "data after the end of the archive"}
			}
		}
		padded += int64(n)
		if padded > 1<<20 {
			return &Error{Kind: ErrMalformed, Detail: "more than 1 MiB of padding after the archive"}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return wrapRead(err, "")
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return &Error{Kind: ErrMalformed, Detail: "data after the gzip stream"}
	}
	return nil
}

// readEntry reads exactly size bytes, growing the buffer as bytes arrive so
// that a header declaring a large size costs memory only once the bytes
// are really there.
func readEntry(r io.Reader, size int64) ([]byte, error) {
	const chunk = 16 << 20
	buf := make([]byte, 0, min(size, chunk))
	for int64(len(buf)) < size {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(size-int64(len(buf)), int64(cap(buf))))...)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(int64(cap(buf)), size)])
		buf = buf[:len(buf)+n]
		if err == io.EOF && int64(len(buf)) < size {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
	}
	return buf, nil
}

func wrapRead(err error, entry string) error {
	var ae *Error
	if errors.As(err, &ae) {
		if ae.Entry == "" {
			ae.Entry = entry
		}
		return ae
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &Error{Kind: ErrMalformed, Entry: entry, Detail: "truncated archive"}
	}
	return &Error{Kind: ErrMalformed, Entry: entry, Detail: err.Error()}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type ratioReader struct {
	c     *countingReader
	check func() error
}

func (r *ratioReader) Read(p []byte) (int, error) {
	n, err := r.c.Read(p)
	if cerr := r.check(); cerr != nil {
		return 0, cerr
	}
	return n, err
}

var epoch = time.Unix(0, 0).UTC()
