package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The copy walk's errors name the workspace-relative path, and the
// excluded subtrees (the run store: blobs, temp files, locks) are not
// copied. Daemon-free: the walk is what feeds the copy container.
func TestWorkspaceWalkNamesPathsAndExcludes(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"README": 5, "src/big.bin": 40, ".proofgate/contract.yaml": 3,
		".proofgate/runs/r1/events.lock": 2, ".proofgate/runs/r1/blobs/sha256/.tmp-1": 4} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if _, err := walkWorkspace(tw, dir, tarOptions{exclude: []string{".proofgate/runs"}}); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	var names []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"README", "src/big.bin", ".proofgate/contract.yaml"} {
		if !strings.Contains(all, want) {
			t.Errorf("%s not copied: %v", want, names)
		}
	}
	if strings.Contains(all, "runs") || strings.Contains(all, "events.lock") {
		t.Errorf("the run store was copied: %v", names)
	}

	// Over workspace_size: the error is typed and names the file.
	_, err := walkWorkspace(tar.NewWriter(io.Discard), dir, tarOptions{size: 20, exclude: []string{".proofgate/runs"}})
	if !errors.Is(err, ErrWorkspaceSize) || !strings.Contains(err.Error(), "src/big.bin") {
		t.Fatalf("over workspace_size: %v", err)
	}
	// Over the copy limit: typed.
	if _, err := walkWorkspace(tar.NewWriter(io.Discard), dir, tarOptions{limit: 20}); !errors.Is(err, ErrCopyLimit) {
		t.Fatalf("over the copy limit: %v", err)
	}
}

// Every entry carries the checkout's mtime, and each directory below the
// root comes again after the whole tree, so that the daemon's unpacking of
// its children does not leave it with the copy's time. Daemon-free.
func TestWorkspaceWalkKeepsModTimes(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("b"), 0o644)
	want := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	for _, p := range []string{"sub/b.txt", "sub", "."} {
		os.Chtimes(filepath.Join(dir, p), want, want)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	root, err := walkWorkspace(tw, dir, tarOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tw.Close()
	if !root.ModTime.Equal(want) || root.Name != "/" {
		t.Errorf("root entry %q at %s", root.Name, root.ModTime)
	}
	var order []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(want) {
			t.Errorf("%s: mtime %s, want %s", h.Name, h.ModTime, want)
		}
		order = append(order, h.Name)
	}
	if got := strings.Join(order, " "); got != "/ sub/ sub/b.txt sub/" {
		t.Errorf("entries %s", got)
	}
}
