package run

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/kernel/replay"
)

// TestProductStore: the collector stores what it is given, refuses what
// cannot be a product, and says which glob matched nothing.
func TestProductStore(t *testing.T) {
	ps := &productStore{blobs: blob.New(t.TempDir())}
	for _, p := range []struct{ path, body string }{{"dist/b", "bee"}, {"dist/a", "ay"}} {
		if err := ps.Add(p.path, int64(len(p.body)), strings.NewReader(p.body)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ps.products([]string{"dist/*"})
	if err != nil || len(got) != 2 || got[0].Path != "dist/a" || got[1].Size != 3 {
		t.Fatalf("products %+v, %v", got, err)
	}
	if _, err := ps.products([]string{"dist/*", "pkg/*.tgz"}); err == nil || !strings.Contains(err.Error(), `matches "pkg/*.tgz"`) {
		t.Fatalf("unmatched glob: %v", err)
	}
	for _, c := range []struct {
		name, path string
		size       int64
		body       string
		want       string
	}{
		{"escaping path", "../x", 1, "x", "cannot name a product"},
		{"control character", "dist/a\x1b", 1, "x", "cannot name a product"},
		{"shorter than said", "dist/c", 5, "x", "read 1 bytes, its entry said 5"},
		{"longer than said", "dist/c", 1, "xyz", "read 2 bytes, its entry said 1"},
		{"negative size", "dist/c", -1, "", "past the"},
		{"past the bound", "dist/c", replay.MaxProductBytes, "", "past the"},
	} {
		if err := ps.Add(c.path, c.size, strings.NewReader(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := ps.Add("dist/c", 4, iotest.ErrReader(errors.New("daemon went away"))); err == nil {
		t.Error("a failed read was stored")
	}
	full := &productStore{blobs: blob.New(t.TempDir())}
	for i := range replay.MaxProducts {
		if err := full.Add("f/"+strings.Repeat("x", i+1), 0, strings.NewReader("")); err != nil {
			t.Fatal(err)
		}
	}
	if err := full.Add("f/one-more", 0, strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "more than 256") {
		t.Fatalf("product %d: %v", replay.MaxProducts+1, err)
	}
}

// TestWriteProducts: products are written from the blob store, re-hashed;
// an existing file is kept unless replace; a corrupt blob and a link out
// of the directory leave nothing behind.
func TestWriteProducts(t *testing.T) {
	runDir := t.TempDir()
	store := blob.New(filepath.Join(runDir, BlobDir))
	d, err := store.Put([]byte("binary"))
	if err != nil {
		t.Fatal(err)
	}
	ps := []replay.Product{{Path: "dist/app", Digest: d, Size: 6}}
	out := t.TempDir()
	if err := WriteProducts(runDir, out, ps, false); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "dist", "app")); err != nil || string(b) != "binary" {
		t.Fatalf("dist/app %q, %v", b, err)
	}
	if err := WriteProducts(runDir, out, ps, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("existing file: %v, want fs.ErrExist", err)
	}
	os.WriteFile(filepath.Join(out, "dist", "app"), []byte("mine"), 0o644)
	if err := WriteProducts(runDir, out, ps, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "dist", "app")); string(b) != "binary" {
		t.Fatalf("replaced with %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(out, "dist")); len(ents) != 1 {
		t.Fatalf("staging files left: %v", ents)
	}

	conflict := append(ps, replay.Product{Path: "dist/app", Digest: "sha256:" + strings.Repeat("0", 64)})
	if err := WriteProducts(runDir, t.TempDir(), conflict, false); err == nil || !strings.Contains(err.Error(), "different content") {
		t.Fatalf("two contents at one path: %v", err)
	}

	// A corrupt blob: the file is not written.
	p, _ := store.Path(d)
	os.Chmod(p, 0o644)
	os.WriteFile(p, []byte("binarY"), 0o644)
	bad := t.TempDir()
	if err := WriteProducts(runDir, bad, ps, false); err == nil || !strings.Contains(err.Error(), "hashes to") {
		t.Fatalf("corrupt blob: %v", err)
	}
	if _, err := os.Stat(filepath.Join(bad, "dist", "app")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("corrupt blob left dist/app: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(bad, "dist")); len(ents) != 0 {
		t.Fatalf("staging files left: %v", ents)
	}

	// A link out of the directory is not followed.
	os.WriteFile(p, []byte("binary"), 0o444)
	outside, linked := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(linked, "dist")); err != nil {
		t.Fatal(err)
	}
	if err := WriteProducts(runDir, linked, ps, false); err == nil {
		t.Fatal("wrote through a link out of the directory")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside: %v", ents)
	}
}
