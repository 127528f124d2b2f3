package eventlog

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzHeadIndex fuzzes the bytes of events.head.json beside a real
// segmented log: Open never panics, and Open+Load always returns the events
// ReadFile reads from the files (the index is a cache, never content), and
// leaves the event files unchanged.
func FuzzHeadIndex(f *testing.F) {
	path := segLogF(f)
	files, err := Files(path)
	if err != nil || len(files) < 3 {
		f.Fatalf("files %v %v, want a segmented log", files, err)
	}
	orig := map[string][]byte{}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		orig[filepath.Base(p)] = b
	}
	want, err := ReadFile(path, nil)
	if err != nil {
		f.Fatal(err)
	}
	ix, err := os.ReadFile(headPath(path))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ix)
	for _, s := range []string{"", "{", "null", "[]", `{"v":1}`, strings.Repeat("[", 5000)} {
		f.Add([]byte(s))
	}
	for _, r := range [][2]string{{`"seq":`, `"seq":1`}, {`"segments":`, `"segments":1`}, {`"offset":`, `"offset":1`},
		{`"bytes":`, `"bytes":9`}, {`"length":`, `"length":1`}, {`"lines":`, `"lines":9`}, {`"v":1`, `"v":1,"v":1`},
		{`"seq":`, `"Seq":2,"seq":`}, {`"offset":`, `"offset":99999999999999999999`}, {`"file":"`, `"file":"../`}} {
		f.Add(bytes.Replace(ix, []byte(r[0]), []byte(r[1]), 1))
	}
	f.Add(ix[:len(ix)/2])
	f.Fuzz(func(t *testing.T, index []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "events.ndjson")
		for name, b := range orig {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(headPath(p), index, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(p)
		if err != nil {
			t.Fatalf("Open refused a valid log because of its index: %v", err)
		}
		if l.Len() != len(want) || l.Head() != want[len(want)-1].Hash {
			t.Fatalf("Open: len %d head %s, files hold %d", l.Len(), l.Head(), len(want))
		}
		if err := l.Load(); err != nil {
			t.Fatalf("Load: %v", err)
		}
		if !reflect.DeepEqual(l.Events(), want) {
			t.Fatal("Open+Load events differ from ReadFile's")
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		for name, b := range orig {
			if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, b) {
				t.Fatalf("%s changed", name)
			}
		}
	})
}

// segLogF is segLog for a fuzz target: 40 events in 1 KiB segments.
func segLogF(f *testing.F) string {
	f.Setenv(SegmentSizeEnv, "1KiB")
	path := filepath.Join(f.TempDir(), "events.ndjson")
	l, err := Create(path, testBinding)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 40 {
		if _, err := l.Append("check.finished", map[string]any{"check": "c" + strconv.Itoa(i), "exit_code": i}); err != nil {
			f.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	return path
}

// FuzzParseSize: no panic; an accepted value is a positive size within
// the bound, and its canonical spelling parses to the same size.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4KiB", "10MiB", "65536", "1GiB", "1024GiB", "1025GiB", "0", "-1", "4kb", "KiB", "1.5MiB",
		"99999999999999", "9223372036854775807", "0x10", "007KiB", "1KiBKiB", "１KiB", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, err := ParseSize(v)
		if err != nil {
			return
		}
		if n < 1 || n > maxSegmentSize {
			t.Fatalf("%q: %d out of bounds", v, n)
		}
		if m, err := ParseSize(strconv.FormatInt(n, 10)); err != nil || m != n {
			t.Fatalf("%q = %d, but its decimal gives %d %v", v, n, m, err)
		}
	})
}
