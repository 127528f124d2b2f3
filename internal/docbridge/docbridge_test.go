package docbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/provider"
	"github.com/proofgate/proofgate/internal/run"
)

// makeIndex writes a valid index of entries to dir/.doc-bridge/index.json.
func makeIndex(t *testing.T, dir string, entries []Entry) string {
	t.Helper()
	h, err := canon.Digest(body{1, entries})
	if err != nil {
		t.Fatal(err)
	}
	b, err := canon.Marshal(file{1, entries, h})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, DefaultIndex)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func reasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func entries(n int) []Entry {
	var es []Entry
	for i := range n {
		es = append(es, Entry{ID: fmt.Sprintf("doc-%02d", i), Title: "Cache notes", Path: fmt.Sprintf("docs/%02d.md", i), Text: strings.Repeat("cache ", i%3+1) + "health endpoint"})
	}
	return es
}

// More than eight matches: exactly eight, by score then id, every time.
func TestMoreThanEightCappedDeterministic(t *testing.T) {
	dir := t.TempDir()
	p := makeIndex(t, dir, append(entries(20), Entry{ID: "zz-other", Title: "Unrelated", Text: "nothing"}))
	ix, err := Load(p, DefaultIndex)
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for range 3 {
		s, b, err := provider.Resolve(context.Background(), Name, ix, "Cache health")
		if err != nil {
			t.Fatal(err)
		}
		if len(s.References) != 8 || s.Provenance.Matches != 20 || s.Provenance.ContentHash != ix.ContentHash() {
			t.Fatalf("references %d, provenance %+v", len(s.References), s.Provenance)
		}
		// score: title "cache" ×3 + text count (3 for i%3==2): ids 02, 05, 08, ...
		want := []string{"doc-02", "doc-05", "doc-08", "doc-11", "doc-14", "doc-17", "doc-01", "doc-04"}
		for i, r := range s.References {
			if r.ID != want[i] {
				t.Fatalf("order: %d is %s, want %s", i, r.ID, want[i])
			}
		}
		if first != nil && !bytes.Equal(first, b) {
			t.Fatal("the snapshot is not stable")
		}
		first = b
		// Accepted by the run's own context-file parser.
		snaps, err := run.ParseContext("f", b)
		if err != nil || snaps[0].Hash != s.Hash {
			t.Fatalf("ParseContext: %v", err)
		}
	}
}

// A tampered index (an entry edited, the hash kept) fails closed; so does
// a hash edited alone.
func TestTamperedIndexRefused(t *testing.T) {
	dir := t.TempDir()
	p := makeIndex(t, dir, entries(3))
	b, _ := os.ReadFile(p)
	for _, edit := range [][2]string{{`"Cache notes"`, `"Cache notez"`}, {`"contentHash":"sha256:`, `"contentHash":"sha256:0`}} {
		bad := bytes.Replace(b, []byte(edit[0]), []byte(edit[1]), 1)
		if bytes.Equal(bad, b) {
			t.Fatalf("edit %q did nothing", edit[0])
		}
		if _, err := Parse(p, DefaultIndex, bad); reasonOf(err) != ReasonTampered {
			t.Errorf("edit %q: %v", edit[0], err)
		}
	}
	os.WriteFile(p, bytes.Replace(b, []byte(`"Cache notes"`), []byte(`"Cache notez"`), 1), 0o644)
	if _, err := Load(p, DefaultIndex); reasonOf(err) != ReasonTampered {
		t.Errorf("tampered file: %v", err)
	}
}

func TestMalformedMissingOversizedRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "nope.json"), "nope.json"); reasonOf(err) != ReasonMissing {
		t.Errorf("missing: %v", err)
	}
	for name, src := range map[string]string{
		"not json":      `{"version":1,`,
		"unknown field": `{"version":1,"entries":[],"contentHash":"x","extra":1}`,
		"duplicate":     `{"version":1,"version":1,"entries":[],"contentHash":"x"}`,
		"case variant":  `{"Version":1,"entries":[],"contentHash":"x"}`,
		"no entries":    `{"version":1,"contentHash":"x"}`,
		"no hash":       `{"version":1,"entries":[]}`,
		"version 2":     `{"version":2,"entries":[],"contentHash":"x"}`,
		"dup id":        `{"version":1,"entries":[{"id":"a","title":"","path":"","text":""},{"id":"a","title":"","path":"","text":""}],"contentHash":"x"}`,
		"empty id":      `{"version":1,"entries":[{"id":"","title":"","path":"","text":""}],"contentHash":"x"}`,
		"array":         `[]`,
		"trailing":      `{"version":1,"entries":[],"contentHash":"x"} {}`,
		"text too long": `{"version":1,"entries":[{"id":"a","title":"","path":"","text":"` + strings.Repeat("x", MaxText+1) + `"}],"contentHash":"x"}`,
	} {
		if _, err := Parse("i.json", "i.json", []byte(src)); reasonOf(err) != ReasonMalformed {
			t.Errorf("%s: %v", name, err)
		}
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, bytes.Repeat([]byte(" "), MaxIndex+1), 0o644)
	if _, err := Load(big, "big.json"); reasonOf(err) != ReasonTooLarge {
		t.Errorf("oversized: %v", err)
	}
	if _, err := Load(dir, "dir"); reasonOf(err) != ReasonMalformed {
		t.Errorf("directory: %v", err)
	}
}

func TestQueryTerms(t *testing.T) {
	if got := Terms("Cache, cache; HEALTH-endpoint 503"); strings.Join(got, " ") != "cache health endpoint 503" {
		t.Errorf("terms %q", got)
	}
	dir := t.TempDir()
	ix, err := Load(makeIndex(t, dir, entries(2)), DefaultIndex)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Resolve(context.Background(), "!!! ---"); reasonOf(err) != ReasonQuery {
		t.Errorf("no terms: %v", err)
	}
	res, err := ix.Resolve(context.Background(), "cache absentword")
	if err != nil || len(res.References) != 0 || res.Provenance.Matches != 0 {
		t.Errorf("every term must match: %+v %v", res, err)
	}
}
