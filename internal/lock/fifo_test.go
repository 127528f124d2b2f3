package lock

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/bounded"
)

// A FIFO planted as a lock or as a process record is refused at once: a
// blocking open would wait for a writer forever (and keep a prune, a gc or
// an unlock waiting with it).
func TestFIFOLockAndRecordRefused(t *testing.T) {
	dir := t.TempDir()
	for name, read := range map[string]func(string) error{
		"lock":   func(p string) error { _, err := Read(p); return err },
		"record": func(p string) error { _, err := ReadGroup(p); return err },
	} {
		p := filepath.Join(dir, name)
		if err := mkfifo(p); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- read(p) }()
		select {
		case err := <-done:
			var nr *bounded.NotRegularError
			if !errors.As(err, &nr) {
				t.Errorf("%s: %v, want a not-regular-file refusal", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: reading a FIFO blocked", name)
		}
	}
}
