package tool

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/contract"
)

// FuzzRender feeds arbitrary argument bytes to Render for a tool with one
// parameter of each type: it never panics, refuses only with *ArgError,
// and whatever it accepts keeps argv's shape (one element per template
// element, fixed elements unchanged), gives path values that are clean,
// relative and not flags, and a stdin that is the canonical form.
func FuzzRender(f *testing.F) {
	r, err := contract.Parse("c.yaml", []byte(head+tools+`  - name: all
    run: [/bin/x, "{{s}}", fixed, "{{p}}", "{{i}}", "{{b}}"]
    stdin: json
    params:
      s: {type: string, required: true, max_length: 16}
      p: {type: path, required: true}
      i: {type: integer, required: true}
      b: {type: boolean, required: true}
      e: {type: string, enum: [x, y]}
`), "")
	if err != nil {
		f.Fatal(err)
	}
	all, _ := r.Tool("all")
	for _, s := range []string{
		`{"s":"a","p":"b","i":1,"b":true}`, `{"s":"$(id)","p":"../x","i":1e3,"b":"true"}`,
		`{"s":"a","p":"b","i":1,"b":true,"e":"x"}`, `{"s":"a","s":"b"}`, `{"S":"a"}`, `[]`, `{`,
		`{"s":"\u0000","p":"-x","i":-0,"b":null}`, `{"s":"a","p":"a/./b","i":9007199254740992,"b":false}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		c, err := Render(all, args)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Reason == "" {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if len(c.Argv) != 6 || c.Argv[0] != "/bin/x" || c.Argv[2] != "fixed" {
			t.Fatalf("argv shape %q", c.Argv)
		}
		if c.Argv[5] != "true" && c.Argv[5] != "false" {
			t.Fatalf("boolean %q", c.Argv[5])
		}
		if p := c.Argv[3]; pathProblem(p) != "" || strings.HasPrefix(p, "-") || slices.Contains(strings.Split(p, "/"), "..") {
			t.Fatalf("path %q accepted", p)
		}
		for _, a := range c.Argv {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("NUL in argv %q", c.Argv)
			}
		}
		want, err := canon.Transform(args)
		if err != nil || !bytes.Equal(want, c.Stdin) {
			t.Fatalf("stdin %q, canonical %q (%v)", c.Stdin, want, err)
		}
	})
}
