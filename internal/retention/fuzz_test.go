package retention

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

const fuzzRun = "20261201T120000Z-fuzz01"

// FuzzReadPlaceholder: archived.json bytes never panic; a refusal is a
// *Error with ReasonPlaceholder; an accepted one is v 1 of this run.
func FuzzReadPlaceholder(f *testing.F) {
	dir := filepath.Join(f.TempDir(), fuzzRun)
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	p := Placeholder{V: 1, Run: fuzzRun, Archive: "archive/" + fuzzRun + ArchiveSuffix, Digest: "sha256:" + strings.Repeat("a", 64),
		Size: 10, State: "passed", Head: "sha256:" + strings.Repeat("b", 64), Length: 3, Archived: "2026-12-01T12:00:00Z"}
	if err := writePlaceholder(dir, p); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(PlaceholderPath(dir))
	f.Add(good)
	for _, s := range []string{"", "{", `{"v":1,"run":"` + fuzzRun + `","v":1}`, `{"V":1,"run":"` + fuzzRun + `"}`,
		`{"v":1e400,"run":"` + fuzzRun + `"}`, `{"v":1,"run":"` + fuzzRun + `","size":99999999999999999999}`, strings.Repeat(`{"a":`, 3000)} {
		f.Add([]byte(s))
	}
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		d := filepath.Join(t.TempDir(), fuzzRun)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(PlaceholderPath(d), b, 0o644); err != nil {
			t.Fatal(err)
		}
		ph, err := ReadPlaceholder(d)
		var re *Error
		switch {
		case err != nil && (!errors.As(err, &re) || re.Reason != ReasonPlaceholder):
			t.Fatalf("untyped refusal %v", err)
		case err == nil && (ph.V != 1 || ph.Run != fuzzRun):
			t.Fatalf("accepted %+v", ph)
		}
	})
}

// FuzzReadHistory: prune-log bytes never panic; a refusal is a *Error with
// ReasonPruneLog; every accepted record names a run.
func FuzzReadHistory(f *testing.F) {
	st := f.TempDir()
	lg, err := eventlog.Create(filepath.Join(st, LogFile), logBinding)
	if err != nil {
		f.Fatal(err)
	}
	for _, id := range []string{fuzzRun, fuzzRun + "x"} {
		if _, err := lg.Append(TypeArchived, ArchivedData{Run: id, Archive: "archive/" + id + ArchiveSuffix, Digest: "sha256:" + strings.Repeat("a", 64), Files: 2}); err != nil {
			f.Fatal(err)
		}
	}
	lg.Close()
	good, _ := os.ReadFile(filepath.Join(st, LogFile))
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(bytes.Replace(good, []byte(`"run":"`+fuzzRun), []byte(`"run":"`+fuzzRun+`","run":"`), 1))
	f.Add(bytes.Replace(good, []byte(`"files":2`), []byte(`"files":2e999`), 1))
	f.Add(append(good, good...))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := t.TempDir()
		if err := os.WriteFile(filepath.Join(st, LogFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := ReadHistory(st)
		var re *Error
		if err != nil {
			if !errors.As(err, &re) || re.Reason != ReasonPruneLog {
				t.Fatalf("untyped refusal %v", err)
			}
			return
		}
		for id, d := range h.Archived {
			if id == "" || d.Run != id {
				t.Fatalf("record %q: %+v", id, d)
			}
		}
	})
}

// FuzzExtractArchive: archive bytes never panic and never write outside
// the destination; an accepted archive extracts regular files only.
func FuzzExtractArchive(f *testing.F) {
	src := f.TempDir()
	for name, body := range map[string]string{"events.ndjson": "{}\n", "sub/out.txt": "x", "empty": ""} {
		p := filepath.Join(src, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	files, err := listRunFiles(src)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeArchive(&buf, src, files); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add(append(append([]byte{}, good...), good...))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		dst := filepath.Join(root, "run")
		err := extractArchive(bytes.NewReader(b), dst)
		filepath.WalkDir(root, func(p string, d fs.DirEntry, werr error) error {
			if werr == nil && p != root && p != dst && !strings.HasPrefix(p, dst+string(filepath.Separator)) {
				t.Fatalf("wrote %s outside %s", p, dst)
			}
			if werr == nil && err == nil && !d.IsDir() && !d.Type().IsRegular() {
				t.Fatalf("extracted non-regular %s", p)
			}
			return nil
		})
	})
}
