package contract

import (
	"strings"
	"testing"
)

const arrayHead = `version: 1
name: t
defaults: {runtime: process}
checks: [{id: c, run: [echo, ok]}]
tools:
`

// An array parameter resolves with its effective max_items and is
// delivered on stdin only.
func TestArrayParamResolves(t *testing.T) {
	r := mustParse(t, arrayHead+`  - name: chat
    run: [cat]
    stdin: json
    params:
      messages: {type: array, required: true, max_items: 40}
      notes: {type: array}
`, "")
	tl, _ := r.Tool("chat")
	if p := tl.Params["messages"]; p.Type != ParamArray || p.MaxItems != 40 || !p.Required || p.MaxLength != 0 {
		t.Errorf("messages = %+v", p)
	}
	if p := tl.Params["notes"]; p.MaxItems != DefaultMaxItems {
		t.Errorf("notes max_items = %d, want the default %d", p.MaxItems, DefaultMaxItems)
	}
}

// Each refusal names the field it is about.
func TestArrayParamRefused(t *testing.T) {
	for _, c := range []struct{ name, body, path, msg string }{
		{"in argv template", `  - name: chat
    run: [cat, "{{messages}}"]
    stdin: json
    params: {messages: {type: array, required: true}}
`, "tools[0].run[1]", "only on stdin"},
		{"without stdin json", `  - name: chat
    run: [cat]
    params: {messages: {type: array, required: true}}
`, "tools[0].params.messages", "set stdin: json"},
		{"max_items on a string", `  - name: chat
    run: [cat]
    stdin: json
    params: {m: {type: string, max_items: 3}}
`, "tools[0].params.m.max_items", "applies to array parameters"},
		{"max_length on an array", `  - name: chat
    run: [cat]
    stdin: json
    params: {m: {type: array, max_length: 3}}
`, "tools[0].params.m.max_length", "applies to string and path"},
		{"max_items zero", `  - name: chat
    run: [cat]
    stdin: json
    params: {m: {type: array, max_items: 0}}
`, "tools[0].params.m.max_items", ""},
		{"max_items too large", `  - name: chat
    run: [cat]
    stdin: json
    params: {m: {type: array, max_items: 65537}}
`, "tools[0].params.m.max_items", ""},
		{"unknown type", `  - name: chat
    run: [cat]
    stdin: json
    params: {m: {type: list}}
`, "tools[0].params.m.type", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ce := parseErr(t, arrayHead+c.body, "")
			if ce.Path != c.path || !strings.Contains(ce.Msg, c.msg) {
				t.Errorf("got %s: %s; want path %s containing %q", ce.Path, ce.Msg, c.path, c.msg)
			}
		})
	}
}

// The resolved contract of a tool without array parameters does not carry
// max_items (the hash of existing contracts is unchanged).
func TestNoMaxItemsWithoutArrays(t *testing.T) {
	r := mustParse(t, arrayHead+`  - name: greet
    run: [echo, "{{name}}"]
    params: {name: {type: string, required: true}}
`, "")
	b, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "max_items") {
		t.Errorf("resolved contract carries max_items: %s", b)
	}
}
