package retention

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/durable"
)

// Archive layout and bounds.
const (
	// ArchiveDir is <state>/archive.
	ArchiveDir = "archive"
	// ArchiveSuffix ends every archive name: <RUN>.tar.gz.
	ArchiveSuffix = ".tar.gz"
	// MaxArchiveEntries bounds the files of one archived run.
	MaxArchiveEntries = 1 << 20
	// MaxArchiveFile bounds one file of an archived run.
	MaxArchiveFile int64 = 16 << 30
	// maxNameLen bounds an entry name.
	maxNameLen = 1024
	// lockFile is the run's writer lock, which is not evidence and is
	// never archived.
	lockFile = "events.lock"
)

// ArchivePath is the archive of run id: <state>/archive/<id>.tar.gz.
func ArchivePath(stateDir, id string) string {
	return filepath.Join(stateDir, ArchiveDir, id+ArchiveSuffix)
}

// tmpArchive is where an archive is written before it is renamed into
// place: a dot name no reader looks at, removed by Recover.
func tmpArchive(stateDir, id string) string {
	return filepath.Join(stateDir, ArchiveDir, "."+id+ArchiveSuffix+".tmp")
}

// runFile is one regular file of a run directory, by slash path.
type runFile struct {
	name string // slash-separated, relative to the run directory
	size int64
}

// listRunFiles returns every regular file under dir (but the lock), sorted
// by name. Anything else (a symlink, a device) is refused: an archive
// holds regular files only.
func listRunFiles(dir string) ([]runFile, error) {
	var out []runFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return nil
		case rel == lockFile || strings.HasPrefix(rel, lockFile+"."):
			return nil // the lock and a lock's temporary file: not evidence
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s)", rel, d.Type())
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, runFile{name: rel, size: info.Size()})
		if len(out) > MaxArchiveEntries {
			return fmt.Errorf("more than %d files", MaxArchiveEntries)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

// header is the fixed tar header of a file: regular, mode 0444, owner 0,
// mtime 0, so the same files always give the same bytes.
func header(name string, size int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o444, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
}

// writeArchive writes the deterministic .tar.gz of files (read from dir)
// to w.
func writeArchive(w io.Writer, dir string, files []runFile) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	zw.Header.OS = 255
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(header(f.name, f.size)); err != nil {
			return fmt.Errorf("archive %s: %w", f.name, err)
		}
		if err := copyFile(tw, filepath.Join(dir, filepath.FromSlash(f.name)), f.size); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func copyFile(w io.Writer, p string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size+1))
	if err != nil {
		return fmt.Errorf("archive %s: %w", p, err)
	}
	if n != size {
		return fmt.Errorf("archive %s: changed while archived (%d bytes, listed %d)", p, n, size)
	}
	return nil
}

// createArchive writes run dir's archive to its temporary name, fsynced,
// and returns its digest and size.
func createArchive(stateDir, id, dir string, files []runFile) (digest string, size int64, err error) {
	if err := os.MkdirAll(filepath.Join(stateDir, ArchiveDir), 0o755); err != nil {
		return "", 0, err
	}
	tmp := tmpArchive(stateDir, id)
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, 256<<10)
	if err := writeArchive(bw, dir, files); err != nil {
		return "", 0, err
	}
	if err := bw.Flush(); err != nil {
		return "", 0, err
	}
	if err := durable.Sync(f); err != nil {
		return "", 0, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), cw.n, f.Close()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// proveArchive reads the archive at p back and proves it byte-identical to
// run directory dir: the file hashes to digest, and holds exactly files,
// in order, each with the bytes dir holds.
func proveArchive(p, digest, dir string, files []runFile) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	i := 0
	err = readArchive(io.TeeReader(f, h), func(name string, size int64, r io.Reader) error {
		if i >= len(files) || files[i].name != name || files[i].size != size {
			return fmt.Errorf("entry %d is %s, the run directory holds %s", i+1, name, nameAt(files, i))
		}
		i++
		return sameBytes(r, filepath.Join(dir, filepath.FromSlash(name)), size)
	})
	if err != nil {
		return err
	}
	if i != len(files) {
		return fmt.Errorf("the archive holds %d files, the run directory %d", i, len(files))
	}
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("read back as %s, written as %s", got, digest)
	}
	return nil
}

func nameAt(files []runFile, i int) string {
	if i < len(files) {
		return files[i].name
	}
	return "nothing more"
}

// sameBytes compares the size bytes of r with the file at p, byte for
// byte, and requires the file to end there.
func sameBytes(r io.Reader, p string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	for left := size; left > 0; {
		n := int(min(left, int64(len(a))))
		if _, err := io.ReadFull(r, a[:n]); err != nil {
			return fmt.Errorf("%s: entry: %w", p, err)
		}
		if _, err := io.ReadFull(f, b[:n]); err != nil {
			return fmt.Errorf("%s: shorter than its entry: %w", p, err)
		}
		if !bytes.Equal(a[:n], b[:n]) {
			return fmt.Errorf("%s: the entry's bytes differ from the file's", p)
		}
		left -= int64(n)
	}
	if k, _ := f.Read(b[:1]); k != 0 {
		return fmt.Errorf("%s: the file is longer than its entry", p)
	}
	return nil
}

// readArchive streams an archive: gzip, then tar entries, each handed to
// fn with a reader of exactly its bytes. Only regular files with safe,
// unique names within the bounds are accepted, and nothing may follow the
// gzip stream.
func readArchive(r io.Reader, fn func(name string, size int64, r io.Reader) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	zr.Multistream(false)
	tr := tar.NewReader(zr)
	seen := map[string]bool{}
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		if err := checkEntry(hdr, n, seen); err != nil {
			return err
		}
		if err := fn(hdr.Name, hdr.Size, tr); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return errors.New("data after the gzip stream")
	}
	return nil
}

func checkEntry(hdr *tar.Header, n int, seen map[string]bool) error {
	name := hdr.Name
	switch {
	case n >= MaxArchiveEntries:
		return fmt.Errorf("more than %d entries", MaxArchiveEntries)
	case hdr.Typeflag != tar.TypeReg:
		return fmt.Errorf("entry %q is not a regular file", name)
	case hdr.Size < 0 || hdr.Size > MaxArchiveFile:
		return fmt.Errorf("entry %q: size %d out of bounds", name, hdr.Size)
	case len(name) == 0 || len(name) > maxNameLen || !fs.ValidPath(name) || strings.ContainsRune(name, '\\') || name == lockFile || name == placeholderFile:
		return fmt.Errorf("entry %q: unsafe name", name)
	case seen[name]:
		return fmt.Errorf("entry %q: duplicate", name)
	}
	seen[name] = true
	return nil
}

// extractArchive extracts the archive read from r into the new directory
// dst (files read-only, directories as the names need).
func extractArchive(r io.Reader, dst string) error {
	return readArchive(r, func(name string, size int64, er io.Reader) error {
		p := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, er)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// fileDigest hashes the file at p.
func fileDigest(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}
