package blob_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proofgate/proofgate/internal/blob"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestPutTwiceIsOneReadOnlyFile(t *testing.T) {
	dir := t.TempDir()
	s := blob.New(dir)
	content := []byte("hello evidence\n")
	d1, err := s.Put(content)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := s.Put(content)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 || d1 != digest(content) {
		t.Fatalf("digests %s %s, want %s", d1, d2, digest(content))
	}
	if got := entries(t, filepath.Join(dir, "sha256")); len(got) != 1 || got[0] != strings.TrimPrefix(d1, "sha256:") {
		t.Fatalf("store holds %v", got)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "sha256" {
		t.Fatalf("temporary files left behind: %v", got)
	}
	p, err := s.Path(d1)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("blob is writable: %v", fi.Mode())
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, content) {
		t.Fatalf("content %q", b)
	}
	if err := s.Verify(d1); err != nil {
		t.Fatal(err)
	}
}

func TestExistingBlobIsNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	s := blob.New(dir)
	content := []byte("the real evidence")
	d := digest(content)
	p, err := s.Path(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := []byte("planted bytes")
	if err := os.WriteFile(p, planted, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.Put(content)
	if !errors.Is(err, blob.ErrMismatch) {
		t.Fatalf("Put over a planted blob: %q, %v; want ErrMismatch", got, err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, planted) {
		t.Fatalf("existing file overwritten: %q", b)
	}
	if err := s.Verify(d); !errors.Is(err, blob.ErrMismatch) {
		t.Fatalf("Verify: %v", err)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("temporary files left behind: %v", got)
	}
}

func TestPlantedSymlinkIsNotABlob(t *testing.T) {
	dir := t.TempDir()
	s := blob.New(dir)
	content := []byte("evidence")
	d := digest(content)
	// A symlink to a file that even holds the right bytes is still refused:
	// blobs are regular files inside the store.
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, content, 0o644)
	p, _ := s.Path(d)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(content); !errors.Is(err, blob.ErrMismatch) {
		t.Fatalf("Put over a symlink: %v", err)
	}
	if err := s.Verify(d); !errors.Is(err, blob.ErrMismatch) {
		t.Fatalf("Verify symlink: %v", err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("symlink replaced: %v %v", fi, err)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	s := blob.New(t.TempDir())
	d, err := s.Put([]byte("original output"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Path(d)
	for _, tamper := range [][]byte{[]byte("original outpuT"), []byte("original output\n"), {}} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, tamper, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.Verify(d); !errors.Is(err, blob.ErrMismatch) || !strings.Contains(err.Error(), d) {
			t.Fatalf("tampered %q: Verify %v", tamper, err)
		}
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(d); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing blob: %v", err)
	}
}

func TestInvalidDigestsRefused(t *testing.T) {
	dir := t.TempDir()
	s := blob.New(dir)
	hex64 := strings.Repeat("ab", 32)
	for _, d := range []string{
		"", "sha256:", "sha256:../../x", "sha256:../../../etc/passwd", "../sha256:" + hex64,
		"sha256:" + strings.ToUpper(hex64), "sha256:" + hex64[:63], "sha256:" + hex64 + "0",
		"sha256:" + hex64 + "\n", "sha256:" + hex64 + "/../x", " sha256:" + hex64,
		"sha512:" + hex64, "SHA256:" + hex64, hex64, "sha256:" + hex64[:62] + "/x",
		"sha256:" + hex64[:63] + "\x00",
	} {
		if blob.ValidDigest(d) {
			t.Errorf("ValidDigest(%q) = true", d)
		}
		if p, err := s.Path(d); err == nil {
			t.Errorf("Path(%q) = %q", d, p)
		}
		if f, err := s.Open(d); err == nil {
			f.Close()
			t.Errorf("Open(%q) succeeded", d)
		}
		if err := s.Verify(d); err == nil {
			t.Errorf("Verify(%q) succeeded", d)
		}
	}
	p, err := s.Path("sha256:" + hex64)
	if err != nil || p != filepath.Join(dir, "sha256", hex64) {
		t.Fatalf("valid digest: %q, %v", p, err)
	}
}

func TestWriterStreamingAndAbort(t *testing.T) {
	dir := t.TempDir()
	s := blob.New(dir)
	w, err := s.Create()
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, chunk := range []string{"a", "bc", strings.Repeat("d", 100000)} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
		all = append(all, chunk...)
	}
	d, n, err := w.Commit()
	if err != nil || d != digest(all) || n != int64(len(all)) {
		t.Fatalf("Commit: %s %d %v", d, n, err)
	}
	if _, _, err := w.Commit(); err == nil {
		t.Fatal("second Commit succeeded")
	}
	w.Abort() // after Commit: a no-op that must not remove the blob
	if err := s.Verify(d); err != nil {
		t.Fatal(err)
	}

	a, err := s.Create()
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("discard me"))
	a.Abort()
	if _, _, err := a.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("abort left files: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "sha256", strings.TrimPrefix(digest([]byte("discard me")), "sha256:"))); err == nil {
		t.Fatal("aborted blob committed")
	}

	// The empty blob is a blob.
	e, err := s.Put(nil)
	if err != nil || e != digest(nil) {
		t.Fatalf("empty: %s %v", e, err)
	}
}

func TestConcurrentPutSameContent(t *testing.T) {
	dir := t.TempDir()
	s := blob.New(dir)
	content := bytes.Repeat([]byte("same"), 10000)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := s.Put(content)
			if err == nil && d != digest(content) {
				err = errors.New("wrong digest " + d)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := entries(t, filepath.Join(dir, "sha256")); len(got) != 1 {
		t.Fatalf("store holds %v", got)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("temporary files left behind: %v", got)
	}
}

// FuzzPath checks that no string maps outside <dir>/sha256/<64 hex>.
func FuzzPath(f *testing.F) {
	hex64 := strings.Repeat("0f", 32)
	for _, seed := range []string{"sha256:" + hex64, "sha256:../../x", "sha256:" + hex64 + "\n", "", "sha256:/" + hex64[1:]} {
		f.Add(seed)
	}
	dir := f.TempDir()
	s := blob.New(dir)
	f.Fuzz(func(t *testing.T, d string) {
		p, err := s.Path(d)
		if (err == nil) != blob.ValidDigest(d) {
			t.Fatalf("Path and ValidDigest disagree on %q", d)
		}
		if err != nil {
			return
		}
		base := filepath.Base(p)
		if filepath.Dir(p) != filepath.Join(dir, "sha256") || len(base) != 64 || strings.Trim(base, "0123456789abcdef") != "" || "sha256:"+base != d {
			t.Fatalf("Path(%q) = %q", d, p)
		}
	})
}

func TestPutMany(t *testing.T) {
	dir := t.TempDir()
	s := blob.New(dir)
	blobs := [][]byte{[]byte("one"), []byte("two"), []byte("one"), {}}
	var digests []string
	for _, b := range blobs {
		h := sha256.Sum256(b)
		digests = append(digests, "sha256:"+hex.EncodeToString(h[:]))
	}
	n, err := s.PutMany(digests, blobs)
	if err != nil || n != 6 {
		t.Fatalf("PutMany wrote %d bytes: %v (want 6: one, two, empty)", n, err)
	}
	for i, d := range digests {
		if err := s.Verify(d); err != nil {
			t.Fatalf("blob %d: %v", i, err)
		}
	}
	if n, err := s.PutMany(digests, blobs); err != nil || n != 0 {
		t.Fatalf("second PutMany wrote %d: %v", n, err)
	}
	// A digest that does not name the bytes is refused, nothing linked.
	if _, err := s.PutMany([]string{digests[0]}, [][]byte{[]byte("three")}); err == nil {
		t.Fatal("bytes given under an existing blob's digest were accepted")
	}
	h := sha256.Sum256([]byte("four"))
	if _, err := s.PutMany([]string{"sha256:" + hex.EncodeToString(h[:])}, [][]byte{[]byte("five")}); err == nil {
		t.Fatal("a blob under another digest was stored")
	}
	if _, err := os.Stat(filepath.Join(dir, "sha256", hex.EncodeToString(h[:]))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("mislabelled blob linked: %v", err)
	}
	// An existing blob with other bytes is reported, not rewritten.
	p := filepath.Join(dir, "sha256", strings.TrimPrefix(digests[1], "sha256:"))
	os.Chmod(p, 0o644)
	os.WriteFile(p, []byte("tampered"), 0o644)
	if _, err := s.PutMany(digests[1:2], blobs[1:2]); !errors.Is(err, blob.ErrMismatch) {
		t.Fatalf("tampered existing blob: %v", err)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(tmp) != 0 {
		t.Fatalf("temp files left: %v", tmp)
	}
}
