package docker

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// products is a collector that keeps what it is given.
type products struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (p *products) Add(path string, size int64, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return fmt.Errorf("%s: %d bytes, said %d", path, len(b), size)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.files == nil {
		p.files = map[string][]byte{}
	}
	p.files[path] = b
	return nil
}

// TestProductsFromCopyWorkspace: after a passed copy-mode check, the files
// its globs match are read out of the container's workspace, as the check
// left them; what is not a regular file is refused and fails the check;
// a failed check's files are not read.
func TestProductsFromCopyWorkspace(t *testing.T) {
	r, ref := sandbox(t)
	ws := workspace(t)
	if err := os.MkdirAll(filepath.Join(ws, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "dist", "src.txt"), []byte("from the checkout\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(globs []string, argv ...string) (*ran, *products) {
		t.Helper()
		spec := helperSpec(ref, argv...)
		spec.Workspace, spec.Sandbox.Workspace = ws, "copy"
		var p products
		spec.Produces, spec.Collect = globs, &p
		return check(t, r, spec, 1<<20), &p
	}

	res, p := run([]string{"dist/*", "missing/app"}, "write", "/workspace/dist/app", "100000")
	assertOutcome(t, res, runtime.Passed)
	if len(p.files) != 2 || len(p.files["dist/app"]) != 100000 || !strings.HasPrefix(string(p.files["dist/app"]), "abcdefg") ||
		string(p.files["dist/src.txt"]) != "from the checkout\n" {
		t.Fatalf("collected %d files: %v", len(p.files), keys(p.files))
	}
	if _, err := os.Stat(filepath.Join(ws, "dist", "app")); err == nil {
		t.Fatal("the check's write reached the host checkout")
	}

	res, p = run([]string{"app"}, "write", "/workspace/app", "7")
	assertOutcome(t, res, runtime.Passed)
	if string(p.files["app"]) != "abcdefg" || len(p.files) != 1 {
		t.Fatalf("a literal glob at the root: %v", keys(p.files))
	}

	res, p = run([]string{"dist/*"}, "exit", "1")
	assertOutcome(t, res, runtime.Failed)
	if len(p.files) != 0 {
		t.Fatalf("a failed check's files were read: %v", keys(p.files))
	}

	for _, c := range []struct {
		name   string
		globs  []string
		argv   []string
		detail string
	}{
		{"a product that is a symbolic link", []string{"dist/app"}, []string{"symlink", "/etc/passwd", "/workspace/dist/app"}, "produces: dist/app is a symbolic link"},
		{"a symbolic link a glob matches", []string{"dist/*"}, []string{"symlink", "/etc/passwd", "/workspace/dist/zz"}, "produces: dist/zz is a symbolic link: a check produces regular files only"},
		{"a directory on the way that is a symbolic link", []string{"out/passwd"}, []string{"symlink", "/etc", "/workspace/out"}, "produces: out is a symbolic link"},
		{"a hard link", []string{"dist/*"}, []string{"link", "/workspace/dist/src.txt", "/workspace/dist/twin"}, "is a hard link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, p := run(c.globs, c.argv...)
			assertOutcome(t, res, runtime.Error)
			if !strings.Contains(res.Detail, c.detail) {
				t.Fatalf("detail %q, want %q", res.Detail, c.detail)
			}
			if _, ok := p.files["dist/zz"]; ok || p.files["out/passwd"] != nil {
				t.Fatalf("collected %v", keys(p.files))
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
