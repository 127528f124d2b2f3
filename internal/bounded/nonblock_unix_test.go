//go:build unix

package bounded

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// within fails the test when f has not returned after a second: a blocked
// open() of a FIFO never returns at all.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		t.Fatalf("%s: still blocked after a second", what)
		return nil
	}
}

func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "allowlist")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link-to-fifo")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{
		{fifo, fs.ModeNamedPipe},
		{link, fs.ModeNamedPipe}, // a link is followed, and its target refused
		{"/dev/zero", fs.ModeCharDevice},
		{"/dev/null", fs.ModeCharDevice},
		{dir, fs.ModeDir},
	} {
		err := within(t, c.path, func() error { _, err := ReadFile(c.path, 1<<20); return err })
		var nr *NotRegularError
		if !errors.As(err, &nr) || nr.Mode.Type()&c.mode == 0 || nr.Path != c.path {
			t.Errorf("ReadFile(%s) = %v, want a NotRegularError", c.path, err)
		}
		err = within(t, c.path, func() error {
			f, err := Open(c.path)
			if err == nil {
				f.Close()
			}
			return err
		})
		if !errors.As(err, &nr) {
			t.Errorf("Open(%s) = %v, want a NotRegularError", c.path, err)
		}
	}
}

func TestReadFileRefusesAnOversizedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, 1025), 0o600); err != nil {
		t.Fatal(err)
	}
	var te *TooLargeError
	if _, err := ReadFile(p, 1024); !errors.As(err, &te) {
		t.Fatalf("ReadFile of 1025 bytes with limit 1024: %v", err)
	}
	if b, err := ReadFile(p, 1025); err != nil || len(b) != 1025 {
		t.Fatalf("ReadFile at its limit: %d bytes, %v", len(b), err)
	}
}

// TestSHA256File: a regular file hashes as sha256sum would; a named pipe
// is refused at once, never read (it would block).
func TestSHA256File(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := SHA256File(p); err != nil || d != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("SHA256File: %s, %v", d, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var nr *NotRegularError
	if _, err := SHA256File(fifo); !errors.As(err, &nr) {
		t.Fatalf("a named pipe: %v", err)
	}
}
