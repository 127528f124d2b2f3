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

// Every writer here counts its fsyncs: WriteFile two (file, directory),
// ReplaceFile one (file), ReplaceVolatile none; each leaves the content.
func TestSyncsCounted(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		write func(string, []byte, os.FileMode) error
		want  int64
	}{{"WriteFile", WriteFile, 2}, {"ReplaceFile", ReplaceFile, 1}, {"ReplaceVolatile", ReplaceVolatile, 0}} {
		p := filepath.Join(dir, tc.name)
		before := Syncs()
		if err := tc.write(p, []byte(tc.name), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := Syncs() - before; got != tc.want {
			t.Errorf("%s: %d fsyncs, want %d", tc.name, got, tc.want)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != tc.name {
			t.Errorf("%s: content %q %v", tc.name, b, err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v", tc.name, fi.Mode(), err)
		}
		if sub := filepath.Join(dir, tc.name+".d"); os.Mkdir(sub, 0o755) == nil {
			if err := tc.write(filepath.Join(sub, "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if names := leftovers(t, sub); len(names) != 1 || names[0] != "f" {
				t.Errorf("%s: left %v", tc.name, names)
			}
		}
	}
}
