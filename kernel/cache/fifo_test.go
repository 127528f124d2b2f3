//go:build unix

package cache

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSpecialFileRefused: a FIFO in a cache is refused, never opened (a
// host reader would hang on it).
func TestSpecialFileRefused(t *testing.T) {
	s := open(t, t.TempDir(), Local())
	l := acquire(t, s, rw)
	dir := l.Mounts()[0].Source
	l.Release()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := s.Acquire(context.Background(), "r", "c", []Use{ro})
	reason(t, err, ReasonSpecial)
}
