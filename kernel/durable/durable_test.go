package durable

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileReplacesWithMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	for _, body := range []string{"one", "two, longer"} {
		if err := WriteFile(p, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		fi, _ := os.Stat(p)
		if string(b) != body || fi.Mode().Perm() != 0o640 {
			t.Fatalf("got %q mode %v", b, fi.Mode())
		}
	}
	if got := leftovers(t, dir); len(got) != 1 {
		t.Fatalf("temp files left: %v", got)
	}
}

func TestFailedWriteChangesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("old"), 0o644)
	boom := errors.New("boom")
	err := Write(p, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("file changed to %q", b)
	}
	if got := leftovers(t, dir); len(got) != 1 {
		t.Fatalf("temp files left: %v", got)
	}
}

func TestCreateExclusiveNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key.pem")
	if err := CreateExclusive(p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := CreateExclusive(p, []byte("second"), 0o600)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v, want fs.ErrExist", err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "first" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %v", b, fi.Mode())
	}
	if got := leftovers(t, dir); len(got) != 1 {
		t.Fatalf("temp files left: %v", got)
	}
}

func TestReplaceFileAndMissingDir(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.json")
	if err := ReplaceFile(p, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "{}" {
		t.Fatalf("got %q", b)
	}
	if err := WriteFile(filepath.Join(dir, "no", "such", "f"), nil, 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}
