// Package fscopy copies directory trees for tests, keeping each file's
// permission bits and modification time (prune judges ages by them).
package fscopy

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Tree copies the tree at src into dst (created as needed), failing t on
// any error. Symlinks and other special files are not expected.
func Tree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, b, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(out, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}
