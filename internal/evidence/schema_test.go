package evidence

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The published schema and the loader agree on the example and on the
// hostile bounds.
func TestAllowlistSchema(t *testing.T) {
	b, err := os.ReadFile("../../docs/schema/evidence-allowlist.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("allowlist.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("allowlist.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		edit func(e map[string]any)
		ok   bool
	}{
		"example":      {func(map[string]any) {}, true},
		"timeout 301":  {func(e map[string]any) { e["timeout_seconds"] = 301 }, false},
		"cap 1 MiB+1":  {func(e map[string]any) { e["output_limit_bytes"] = MaxOutput + 1 }, false},
		"relative cwd": {func(e map[string]any) { e["cwd"] = "x" }, false},
		"bare argv[0]": {func(e map[string]any) { e["argv"] = []string{"curl"} }, false},
		"unknown":      {func(e map[string]any) { e["shell"] = true }, false},
		"no env":       {func(e map[string]any) { delete(e, "env") }, false},
	} {
		e := map[string]any{"argv": []string{"/usr/bin/curl", "-sS", "http://127.0.0.1:8080/health"}, "cwd": "/",
			"env": map[string]string{"LANG": "C"}, "timeout_seconds": 30, "output_limit_bytes": 65536}
		tc.edit(e)
		raw, _ := json.Marshal(map[string]any{"version": 1, "commands": map[string]any{"health-503": e}})
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		serr := s.Validate(v)
		p := filepath.Join(t.TempDir(), "a.json")
		os.WriteFile(p, raw, 0o600)
		_, lerr := Load(p, "")
		if (serr == nil) != tc.ok || (lerr == nil) != tc.ok {
			t.Errorf("%s: schema %v, loader %v, want ok=%v", name, serr, lerr, tc.ok)
		}
	}
}
