package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/proofgate/proofgate/kernel/contract"
)

// compile turns a generated schema into a validator (a JSON Schema
// implementation ProofGate did not write), so that the tests check what a
// client enforces, not the map's shape.
func compile(t *testing.T, s map[string]any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("mem://tool.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://tool.json")
	if err != nil {
		t.Fatalf("generated schema does not compile: %v\n%s", err, b)
	}
	return sch
}

func valid(t *testing.T, s *jsonschema.Schema, instance string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

var exampleTool = contract.Tool{
	Name: "greet",
	Run:  []string{"/bin/echo", "hello", "{{name}}"},
	Params: map[string]contract.Param{
		"name":  {Type: "string", Required: true, MaxLength: 8, Pattern: "^[A-Za-z ]+$", Description: "who"},
		"loud":  {Type: "boolean"},
		"times": {Type: "integer"},
		"env":   {Type: "string", Enum: []string{"staging", "production"}},
		"file":  {Type: "path"},
		"note":  {Type: "string"},
	},
}

func TestInputSchemaEnforcesParams(t *testing.T) {
	s, err := InputSchema(exampleTool)
	if err != nil {
		t.Fatal(err)
	}
	sch := compile(t, s)
	for _, ok := range []string{
		`{"name":"Ada"}`,
		`{"name":"Ada L","loud":true,"times":3,"env":"staging","file":"docs/a.md","note":""}`,
	} {
		if err := valid(t, sch, ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	long := strings.Repeat("x", DefaultMaxLength+1)
	for _, bad := range []string{
		`{}`,                        // required name missing
		`{"name":"Ada","extra":1}`,  // additionalProperties false
		`{"name":"Ada; rm -rf /"}`,  // pattern
		`{"name":"Adaaaaaaa"}`,      // maxLength 8
		`{"name":"Ada","loud":"y"}`, // boolean
		`{"name":"Ada","times":1.5}`,
		`{"name":"Ada","times":"3"}`,
		`{"name":"Ada","env":"Production"}`, // enum is exact
		`{"name":"Ada","note":"` + long + `"}`,
		`{"name":"Ada","file":7}`,
		`[]`,
		`"name"`,
	} {
		if err := valid(t, sch, bad); err == nil {
			t.Errorf("%.80s accepted", bad)
		}
	}
}

func TestInputSchemaShape(t *testing.T) {
	s, err := InputSchema(exampleTool)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	for _, want := range []string{
		`"additionalProperties":false`, `"required":["name"]`, `"type":"object"`,
		`"name":{"description":"who","maxLength":8,"pattern":"^[A-Za-z ]+$","type":"string"}`,
		`"note":{"maxLength":4096,"type":"string"}`,
		`"env":{"enum":["staging","production"],"maxLength":4096,"type":"string"}`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("schema lacks %s:\n%s", want, b)
		}
	}
	if !strings.Contains(string(b), `"file":{"description":"a relative, clean path`) {
		t.Errorf("path param does not say what it accepts:\n%s", b)
	}
	// No params: an empty object and nothing else.
	s, err = InputSchema(contract.Tool{Name: "now", Run: []string{"/bin/date"}})
	if err != nil {
		t.Fatal(err)
	}
	sch := compile(t, s)
	if err := valid(t, sch, `{}`); err != nil {
		t.Error(err)
	}
	if err := valid(t, sch, `{"a":1}`); err == nil {
		t.Error("a tool without params accepted a member")
	}
	if _, ok := s["required"]; ok {
		t.Error("required present for a tool without params")
	}
}

func TestInputSchemaUnknownType(t *testing.T) {
	_, err := InputSchema(contract.Tool{Name: "x", Params: map[string]contract.Param{"p": {Type: "float"}}})
	if err == nil || !strings.Contains(err.Error(), `param p: unknown type "float"`) {
		t.Fatalf("err = %v", err)
	}
}
