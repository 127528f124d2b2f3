package bounded

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestReadAll(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int64
		ok    bool
	}{{"", 0, true}, {"abc", 3, true}, {"abcd", 3, false}, {"abc", 0, false}} {
		b, err := ReadAll(strings.NewReader(c.in), c.limit)
		var te *TooLargeError
		if c.ok != (err == nil) || (!c.ok && (!errors.As(err, &te) || te.Limit != c.limit || b != nil)) || (c.ok && string(b) != c.in) {
			t.Errorf("%q limit %d: %q %v", c.in, c.limit, b, err)
		}
	}
	// Nothing past limit+1 is read from an endless reader.
	r := &counting{}
	if _, err := ReadAll(io.LimitReader(r, 1<<30), 10); err == nil || r.n > 1<<16 {
		t.Fatalf("read %d bytes of an oversized input: %v", r.n, err)
	}
}

type counting struct{ n int }

func (c *counting) Read(p []byte) (int, error) { c.n += len(p); return len(p), nil }

func TestReadFileAndFS(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, bytes.Repeat([]byte("x"), 5), 0o644)
	if b, err := ReadFile(p, 5); err != nil || len(b) != 5 {
		t.Fatal(b, err)
	}
	if _, err := ReadFile(p, 4); err == nil || err.Error() != "larger than 4 bytes" {
		t.Fatal(err)
	}
	if _, err := ReadFile(p+"x", 4); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"a": {Data: []byte("hello")}}
	if b, err := ReadFS(fsys, "a", 5); err != nil || string(b) != "hello" {
		t.Fatal(b, err)
	}
	if _, err := ReadFS(fsys, "a", 2); err == nil {
		t.Fatal("oversized accepted")
	}
}
