package contract

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// A contract without retention, or with an empty retention: section,
// hashes exactly as before.
func TestHashUnchangedWithoutRetention(t *testing.T) {
	data := minimalYAML(t)
	for _, extra := range []string{"", "retention: {}\n"} {
		minimalUnchanged(t, extra)
	}
	if h := mustHash(t, mustParse(t, string(data)+"retention: {}\n", "")); h != "sha256:d68ddc54ff6c91a8ce7703f19667f080d0d899c36db9a45dc1597f7bc0710df7" {
		t.Errorf("minimal.yaml with retention: {} hashes %s", h)
	}
}

// The retention section is hashed: each value changes the hash, and it is
// resolved into every profile.
func TestRetentionHashedAndResolved(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := mustHash(t, mustParse(t, string(data), ""))
	seen := map[string]string{base: "none"}
	for _, extra := range []string{"retention: {archive_after: 30d}\n", "retention: {archive_after: 31d}\n", "retention: {archive_after: 30d, blob_min_age: 2h}\n"} {
		r := mustParse(t, string(data)+extra, "")
		h := mustHash(t, r)
		if prev, dup := seen[h]; dup {
			t.Errorf("%q hashes like %q", extra, prev)
		}
		seen[h] = extra
		if r.Retention == nil || r.Retention.ArchiveAfter < Duration(30*24*time.Hour) {
			t.Errorf("%q resolved to %+v", extra, r.Retention)
		}
	}
}

// Hostile retention values are refused with the field's path.
func TestRetentionRefused(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for extra, field := range map[string]string{
		"retention: {archive_after: 12h}\n":  "retention.archive_after",
		"retention: {archive_after: -30d}\n": "retention",
		"retention: {blob_min_age: 10s}\n":   "retention.blob_min_age",
		"retention: {keep: 3}\n":             "retention",
		"retention: {archive_after: soon}\n": "retention",
	} {
		_, err := Parse("c.yaml", []byte(string(data)+extra), "")
		var ce *Error
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Path, field) {
			t.Errorf("%q: got %v, want an error at %s", extra, err, field)
		}
	}
}

func TestParseAge(t *testing.T) {
	for s, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "36h": 36 * time.Hour, "1d": 24 * time.Hour} {
		if d, err := ParseAge(s); err != nil || time.Duration(d) != want {
			t.Errorf("ParseAge(%q) = %v, %v", s, d, err)
		}
	}
	for _, s := range []string{"", "d", "-1d", "+1d", "1.5d", "1w", "999999d"} {
		if _, err := ParseAge(s); err == nil {
			t.Errorf("ParseAge(%q) accepted", s)
		}
	}
}
