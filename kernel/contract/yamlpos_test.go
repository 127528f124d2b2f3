package contract

import (
	"strings"
	"testing"
)

// A YAML syntax error names the line and column where the mistake is, as
// file:line:col: (go.yaml.in/yaml/v3 alone named the line above the list
// that holds it, or the line before the mapping that holds it).
func TestYAMLSyntaxErrorLine(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      string
	}{
		{"tab indentation", "version: 1\nname: x\nchecks:\n  - id: a\n\trun: [\"true\"]\n",
			"c.yaml:5:1: invalid YAML: found character '\t' that cannot start any token"},
		{"mis-indented list item", "version: 1\nname: x\nchecks:\n  - id: a\n    run: [\"true\"]\n   - id: b\n    run: [\"true\"]\n",
			"c.yaml:6:4: invalid YAML: "},
		{"mis-indented key", "version: 1\nname: x\nchecks:\n  - id: a\n    run: [\"true\"]\n      timeout: 5s\n",
			"c.yaml:6:7: invalid YAML: "},
		{"unclosed flow mapping", "version: 1\nname: x\ndefaults: {runtime: process\nchecks:\n  - id: a\n    run: [\"true\"]\n",
			"c.yaml:4:1: invalid YAML: ',' or '}' must be specified"},
		{"unclosed flow mapping inside a sequence", "version: 1\nchecks: [{id: a, run: [echo, ok]\n",
			"c.yaml:2:10: invalid YAML: could not find flow mapping end token '}'"},
		{"unclosed flow sequence", "version: 1\nname: x\nchecks:\n  - id: a\n    run: [\"true\"\n  - id: b\n",
			"c.yaml:6:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(c.doc), "")
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v\nwant prefix %q", err, c.want)
			}
			if e, ok := AsError(err); !ok || e.Line == 0 {
				t.Fatalf("no line in %#v", err)
			}
		})
	}
}
