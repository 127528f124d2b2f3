//go:build unix

package runtime_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/proofgate/proofgate/kernel/runtime"
)

func TestProductRoots(t *testing.T) {
	for _, c := range []struct {
		globs []string
		want  []string
	}{
		{[]string{"dist/app"}, []string{"dist/app"}},
		{[]string{"dist/*.tar.gz"}, []string{"dist"}},
		{[]string{"dist/**"}, []string{"dist"}},
		{[]string{"*.whl"}, []string{""}},
		{[]string{"dist/app", "dist/*"}, []string{"dist"}},
		{[]string{"dist/*", "dist/*"}, []string{"dist"}},
		{[]string{"a/b/c", "a/x/*", `a/\*/y`}, []string{"a"}},
		{[]string{"a/b/c", "a/x/*"}, []string{"a/b/c", "a/x"}},
		{[]string{"*", "dist/app"}, []string{""}},
	} {
		if got := runtime.ProductRoots(c.globs); !slices.Equal(got, c.want) {
			t.Errorf("ProductRoots(%q) = %q, want %q", c.globs, got, c.want)
		}
	}
}

// collected records what a Products hands its collector.
type collected struct{ files map[string]string }

func (c *collected) Add(path string, size int64, r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return fmt.Errorf("%s: %d bytes, said %d", path, len(b), size)
	}
	if c.files == nil {
		c.files = map[string]string{}
	}
	c.files[path] = string(b)
	return nil
}

func write(t *testing.T, root, name, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCollectDir: the process provider's walk takes the regular files the
// globs match and refuses what is not one, a symbolic link on the way to a
// root included; a root that does not exist yields nothing.
func TestCollectDir(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "dist/app", "binary")
	write(t, ws, "dist/tools/a", "a")
	write(t, ws, "dist/tools/b", "b")
	write(t, ws, "dist/notes.txt", "notes")
	write(t, ws, "src/main.go", "package main")
	var c collected
	if err := runtime.CollectDir(ws, runtime.Products{Globs: []string{"dist/app", "dist/tools/*", "missing/*"}, Collect: &c}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"dist/app": "binary", "dist/tools/a": "a", "dist/tools/b": "b"}
	if fmt.Sprint(c.files) != fmt.Sprint(want) {
		t.Fatalf("collected %v, want %v", c.files, want)
	}

	outside := t.TempDir()
	write(t, outside, "secret", "host secret")
	for _, h := range []struct {
		name, glob, refusal string
		make                func(ws string) error
	}{
		{"symlinked product", "out/app", "out/app is a symbolic link", func(ws string) error {
			os.MkdirAll(filepath.Join(ws, "out"), 0o755)
			return os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "out/app"))
		}},
		{"symlinked directory on the way", "out/secret", "out is a symbolic link", func(ws string) error {
			return os.Symlink(outside, filepath.Join(ws, "out"))
		}},
		{"symlink matched by a glob", "out/*", "out/link is a symbolic link: a check produces regular files only", func(ws string) error {
			os.MkdirAll(filepath.Join(ws, "out"), 0o755)
			return os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "out/link"))
		}},
		{"named pipe", "out/*", "out/fifo is a named pipe", func(ws string) error {
			os.MkdirAll(filepath.Join(ws, "out"), 0o755)
			return syscall.Mkfifo(filepath.Join(ws, "out/fifo"), 0o644)
		}},
	} {
		t.Run(h.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := h.make(ws); err != nil {
				t.Fatal(err)
			}
			var c collected
			err := runtime.CollectDir(ws, runtime.Products{Globs: []string{h.glob}, Collect: &c})
			if err == nil || !strings.Contains(err.Error(), h.refusal) {
				t.Fatalf("CollectDir: %v, want %q", err, h.refusal)
			}
			if len(c.files) != 0 {
				t.Fatalf("collected %v", c.files)
			}
		})
	}
}

// TestOfferWithoutCollector: a provider given globs but no collector
// fails the check instead of dropping the products.
func TestOfferWithoutCollector(t *testing.T) {
	p := runtime.Products{Globs: []string{"a"}}
	err := p.Offer(runtime.Entry{Path: "a", Mode: 0o644, Size: 1}, bytes.NewReader([]byte("x")))
	if err == nil {
		t.Fatal("offered without a collector")
	}
}
