package tool

import (
	"errors"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/contract"
)

func chatTool(t *testing.T) contract.Tool {
	return mustTool(t, loadTools(t, `tools:
  - name: chat
    run: [cat]
    stdin: json
    params:
      messages: {type: array, required: true, max_items: 4}
      model: {type: string, max_length: 16}
`), "chat")
}

// An array argument of any JSON values reaches the tool as part of the
// canonical stdin JSON, never in the argv.
func TestArrayRenders(t *testing.T) {
	args := `{"model":"m","messages":[{"role":"user","content":"hi"},"x",[1,{"a":null}],true]}`
	c, err := Render(chatTool(t), []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := canon.Transform([]byte(args))
	if string(c.Stdin) != string(want) || len(c.Argv) != 1 || c.Argv[0] != "cat" {
		t.Errorf("argv %q stdin %s", c.Argv, c.Stdin)
	}
}

func TestArrayRefused(t *testing.T) {
	deep := `{"messages":[` + strings.Repeat("[", MaxArrayDepth+1) + strings.Repeat("]", MaxArrayDepth+1) + `]}`
	okDeep := `{"messages":[` + strings.Repeat("[", MaxArrayDepth) + strings.Repeat("]", MaxArrayDepth) + `]}`
	if _, err := Render(chatTool(t), []byte(okDeep)); err != nil {
		t.Fatalf("depth %d refused: %v", MaxArrayDepth, err)
	}
	// A string holding brackets is not nesting.
	if _, err := Render(chatTool(t), []byte(`{"messages":["`+strings.Repeat("[", 100)+`\"["]}`)); err != nil {
		t.Fatalf("brackets inside a string counted as depth: %v", err)
	}
	for _, c := range []struct {
		name, args string
		reason     Reason
	}{
		{"too many items", `{"messages":[1,2,3,4,5]}`, ReasonTooMany},
		{"too deep", deep, ReasonTooDeep},
		{"object", `{"messages":{"0":"a"}}`, ReasonType},
		{"string", `{"messages":"[1]"}`, ReasonType},
		{"null", `{"messages":null}`, ReasonType},
		{"duplicate member inside", `{"messages":[{"a":1,"a":2}]}`, ReasonDuplicate},
		{"too large", `{"messages":["` + strings.Repeat("x", MaxArgs) + `"]}`, ReasonTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render(chatTool(t), []byte(c.args))
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Reason != c.reason {
				t.Fatalf("err = %v, want reason %s", err, c.reason)
			}
		})
	}
}

// A hand-made tool naming an array in its argv (the loader refuses it) is
// refused, not rendered.
func TestArrayInArgvRefused(t *testing.T) {
	tl := chatTool(t)
	tl.Run = []string{"cat", "{{messages}}"}
	_, err := Render(tl, []byte(`{"messages":[1]}`))
	var ae *ArgError
	if !errors.As(err, &ae) || ae.Reason != ReasonArgv || ae.Param != "messages" {
		t.Fatalf("err = %v", err)
	}
}

func TestArraySchema(t *testing.T) {
	s := InputSchema(chatTool(t))
	m := s["properties"].(map[string]any)["messages"].(map[string]any)
	if m["type"] != "array" || m["maxItems"] != 4 {
		t.Errorf("schema = %v", m)
	}
}
