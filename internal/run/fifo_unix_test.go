//go:build unix

package run

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at p (the hostile non-regular file).
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
}
