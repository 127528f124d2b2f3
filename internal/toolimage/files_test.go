package toolimage

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/proofgate/proofgate/internal/testimage"
)

// The base layer's /bin/sh is a link to the static busybox, in the tar
// the image is made of.
func TestBaseFilesShell(t *testing.T) {
	if _, err := os.Stat(Busybox); err != nil {
		if os.Getenv("PROOFGATE_REQUIRE_MIRROR") == "1" {
			t.Fatalf("busybox required (scripts/mirror-up.sh installs busybox-static): %v", err)
		}
		t.Skipf("no %s (Debian's busybox-static): %v", Busybox, err)
	}
	files, err := BaseFiles(context.Background(), Busybox)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := testimage.WriteTar(&buf, files); err != nil {
		t.Fatal(err)
	}
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = h
	}
	for name, link := range map[string]string{"bin/sh": Busybox, "usr/bin/env": Busybox} {
		h := entries[name]
		if h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != link {
			t.Errorf("%s in the base layer = %+v, want a link to %s", name, h, link)
		}
	}
	if h := entries["bin/busybox"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode != 0o755 {
		t.Errorf("bin/busybox in the base layer = %+v, want a regular file 0755", h)
	}
}

// TreeFiles keeps links as links (npm's node_modules/.bin) and refuses
// what is neither a file, a directory nor a link.
func TestTreeFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/bin/cli.js", []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cli.js", dir+"/bin/cli"); err != nil {
		t.Fatal(err)
	}
	files, err := TreeFiles(dir, "/usr/local/lib/x")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]testimage.File{}
	for _, f := range files {
		got[f.Path] = f
	}
	if f := got["/usr/local/lib/x/bin/cli"]; f.Link != "cli.js" {
		t.Errorf("link = %+v, want a link to cli.js", f)
	}
	if f := got["/usr/local/lib/x/bin/cli.js"]; f.Source != dir+"/bin/cli.js" || f.Mode != 0o755 {
		t.Errorf("file = %+v", f)
	}
	if err := mkfifo(dir + "/fifo"); err != nil {
		t.Skip(err)
	}
	if _, err := TreeFiles(dir, "/x"); err == nil {
		t.Error("TreeFiles took a fifo")
	}
}
