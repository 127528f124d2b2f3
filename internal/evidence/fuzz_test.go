package evidence

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzAllowlistParse feeds arbitrary bytes to the allowlist decoder (the
// part of Load after the file checks): it never panics, refuses with a
// typed reason, is deterministic, and whatever it accepts respects every
// bound.
func FuzzAllowlistParse(f *testing.F) {
	entry := map[string]any{"argv": []string{"/bin/sh", "-c", "echo hi"}, "cwd": "/tmp",
		"env": map[string]string{"PATH": "/usr/bin:/bin"}, "timeout_seconds": 30, "output_limit_bytes": 4096}
	valid, err := json.Marshal(map[string]any{"version": 1, "commands": map[string]any{"unit": entry, "lint.go": entry}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	for _, s := range []string{
		`{"version":1,"commands":{}}`,
		`{"version":1,"version":1,"commands":{}}`, // duplicate member
		`{"version":1,"Commands":{}}`,             // case variant
		`{"version":1,"commands":{"a":{"argv":["/x"],"cwd":"/","env":{},"timeout_seconds":1,"output_limit_bytes":1}},"commands":{}}`,
		`{"version":1,"commands":{"a":{"argv":["/x"],"cwd":"/","env":{},"timeout_seconds":300,"output_limit_bytes":1048576}}}`,
		`{"version":1,"commands":{"a":{"argv":["/x"],"cwd":"/","env":{},"timeout_seconds":9223372036854775807,"output_limit_bytes":1}}}`,
		`{"version":1,"commands":{"a":{"argv":["/x"],"cwd":"/","env":{},"timeout_seconds":1e400,"output_limit_bytes":1}}}`,
		`{"version":1,"commands":{"a":{"argv":["x"],"cwd":"rel","env":{},"timeout_seconds":1,"output_limit_bytes":1}}}`,
		`{"version":1,"commands":{"a":{"argv":["/x\u0000"],"cwd":"/","env":{},"timeout_seconds":1,"output_limit_bytes":1}}}`,
		`{"version":1,"commands":{"a":{"argv":["/x"],"cwd":"/","env":{"A":"1","A":"2"},"timeout_seconds":1,"output_limit_bytes":1}}}`,
		`{"version":1,"commands":{"a":{"argv":["/x"],"cwd":"/","env":{},"timeout_seconds":1,"output_limit_bytes":1}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		string(valid[:len(valid)/2]),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parse(b)
		a2, err2 := parse(bytes.Clone(b))
		if (err == nil) != (err2 == nil) || (err != nil && *err != *err2) || !reflect.DeepEqual(a, a2) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			if err.Reason == "" {
				t.Fatalf("untyped refusal: %v", err)
			}
			return
		}
		if len(a.Entries) > MaxEntries {
			t.Fatalf("%d entries", len(a.Entries))
		}
		for id, e := range a.Entries {
			if e.ID != id || e.Timeout <= 0 || e.Timeout > MaxTimeout || e.OutputLimit < 1 || e.OutputLimit > MaxOutput ||
				!filepath.IsAbs(e.Cwd) || len(e.Argv) == 0 || len(e.Argv) > MaxArgs || !filepath.IsAbs(e.Argv[0]) ||
				len(e.Env) > MaxEnv || e.Env == nil || !strings.HasPrefix(e.Hash, "sha256:") {
				t.Fatalf("accepted entry out of bounds: %+v", e)
			}
		}
	})
}
