package bench

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes, as YAML and as JSON, to Parse: it never
// panics, refuses with ReasonManifestInvalid, is deterministic, and what it
// accepts has unique ids and respects every bound.
func FuzzParse(f *testing.F) {
	m, err := Parse("b.yaml", []byte(manifestYAML))
	if err != nil {
		f.Fatal(err)
	}
	js, err := json.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	withBaseline := strings.Replace(manifestYAML, "criteria: [{id: done, text: it is done}]",
		"criteria: [{id: done, text: it is done}]\n        baseline: {status: passed, criteria: [done], duration_ms: 12, evidence_digest: sha256:"+strings.Repeat("ab", 32)+"}", 1)
	for _, s := range []string{
		manifestYAML, withBaseline, string(js),
		strings.Replace(manifestYAML, "id: other", "id: health-503", 1),        // duplicate task
		strings.Replace(manifestYAML, "title: API work", "Title: API work", 1), // case variant
		strings.Replace(manifestYAML, "title: API work", "title: API work\n    title: x", 1),
		`{"version":1,"version":1,"suites":[]}`,
		"version: 99999999999999999999999\nsuites: []\n",
		"version: 1\nsuites: &a [*a]\n",
		"a: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n",
		strings.Repeat("[", 10000),
		manifestYAML[:len(manifestYAML)/2],
		"version: 1\n---\nversion: 1\n",
		"? [a]\n: 1\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, asJSON bool) {
		name := "b.yaml"
		if asJSON {
			name = "b.json"
		}
		m, err := Parse(name, b)
		m2, err2 := Parse(name, b)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(m, m2) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Reason != ReasonManifestInvalid {
				t.Fatalf("refusal %T %v", err, err)
			}
			return
		}
		checkAccepted(t, m)
	})
}

func checkAccepted(t *testing.T, m *Manifest) {
	if m.Version != 1 || len(m.Suites) == 0 || len(m.Suites) > MaxSuites {
		t.Fatalf("accepted version %d, %d suites", m.Version, len(m.Suites))
	}
	ids, n := map[string]bool{}, 0
	for _, s := range m.Suites {
		if !idRE.MatchString(s.ID) || ids["suite:"+s.ID] {
			t.Fatalf("suite id %q", s.ID)
		}
		ids["suite:"+s.ID] = true
		for _, tk := range s.Tasks {
			n++
			if !idRE.MatchString(tk.ID) || ids[tk.ID] || len(tk.Criteria) == 0 || len(tk.Criteria) > MaxCriteria || tk.Title == "" {
				t.Fatalf("task %q accepted out of bounds", tk.ID)
			}
			ids[tk.ID] = true
		}
	}
	if n > MaxTasks {
		t.Fatalf("%d tasks", n)
	}
}
