package policy

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/proofgate/proofgate/kernel/contract"
)

const head = `version: 1
name: t
defaults: {runtime: process}
checks: [{id: c, run: [echo, ok]}]
`

func load(t *testing.T, body string) *contract.Resolved {
	t.Helper()
	r, err := contract.Parse("contract.yaml", []byte(head+body), "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return r
}

const agent = `tools:
  - {name: greet, run: [/bin/echo, hi]}
  - {name: wipe, run: [/bin/rm, -rf, x]}
  - {name: deploy, run: [./deploy]}
  - {name: idle, run: [/bin/true]}
  - {name: gated, run: [/bin/true]}
policy:
  - {id: no-wipe, tool: wipe, effect: block, reason: never delete the tree}
  - {tool: greet, effect: allow}
  - {tool: deploy, effect: require-approval}
  - {tool: wipe, effect: allow, reason: too late}
  - {tool: gated, effect: require-approval}
  - {tool: gated, effect: allow}
`

func TestDecide(t *testing.T) {
	g := New(load(t, agent))
	for _, tc := range []struct {
		tool string
		want Decision
	}{
		{"greet", Decision{Allow, 1, "rule-1", ""}},
		// A later allow after an earlier block: the block wins.
		{"wipe", Decision{Block, 0, "no-wipe", "never delete the tree"}},
		{"deploy", Decision{RequireApproval, 2, "rule-2", ""}},
		// require-approval then allow: the first match, approval, wins.
		{"gated", Decision{RequireApproval, 4, "rule-4", ""}},
		// A contract tool no rule names: blocked by default.
		{"idle", Decision{Block, -1, "default", ReasonNoRule}},
		// Not a contract tool at all.
		{"shell", Decision{Block, -1, "default", ReasonUnknownTool}},
		{"", Decision{Block, -1, "default", ReasonUnknownTool}},
	} {
		if got := g.Decide(tc.tool); got != tc.want {
			t.Errorf("Decide(%q) = %+v, want %+v", tc.tool, got, tc.want)
		}
	}
}

// Names that look like or normalise to a contract tool are other names:
// they match no rule and name no tool, so they are blocked by the default,
// even though "greet" itself is allowed.
func TestDecideHostileNames(t *testing.T) {
	g := New(load(t, `tools:
  - {name: greet, run: [/bin/echo, hi]}
  - {name: cafe, run: [/bin/echo, cafe]}
policy:
  - {tool: greet, effect: allow}
  - {tool: cafe, effect: allow}
`))
	if d := g.Decide("greet"); d.Effect != Allow {
		t.Fatalf("greet itself: %+v", d)
	}
	if d := g.Decide("cafe"); d.Effect != Allow {
		t.Fatalf("cafe itself: %+v", d)
	}
	const nfc, nfd = "caf\u00e9", "cafe\u0301" // é precomposed, and e + combining acute
	for _, name := range []string{
		"Greet", "GREET", "greeT",
		"gr\u0435et",                     // Cyrillic small ie
		"gre\u0435t",                     // Cyrillic in another place
		"\uff47\uff52\uff45\uff45\uff54", // fullwidth greet
		"greet ", " greet", "greet\t", "greet\n",
		"greet\x00", "\x00greet",
		"greet\u200b",                 // zero-width space
		"gr\u00e9et",                  // é
		nfc, nfd, "CAFE", "caf\u0435", // Cyrillic ie again
		"greet/../greet", "greet;", "greet*",
	} {
		d := g.Decide(name)
		if d.Effect != Block || d.Rule != -1 || d.RuleID != DefaultRuleID || d.Reason != ReasonUnknownTool {
			t.Errorf("Decide(%q) = %+v, want the default block", name, d)
		}
	}
}

// No rules: every tool is blocked and none is visible.
func TestNoRules(t *testing.T) {
	g := New(load(t, "tools:\n  - {name: greet, run: [/bin/echo]}\n  - {name: wipe, run: [/bin/rm]}\n"))
	for _, name := range []string{"greet", "wipe"} {
		if d := g.Decide(name); d.Effect != Block || d.Rule != -1 || d.RuleID != "default" {
			t.Errorf("Decide(%q) = %+v", name, d)
		}
	}
	if v := g.Visible(); len(v) != 0 {
		t.Errorf("visible: %v", v)
	}
	// No tools either, and a nil contract: nothing visible, all blocked.
	for _, g := range []*Gate{New(load(t, "")), New(nil), New(&contract.Resolved{})} {
		if v := g.Visible(); len(v) != 0 {
			t.Errorf("visible without tools: %v", v)
		}
		if d := g.Decide("greet"); d.Effect != Block || d.Rule != -1 {
			t.Errorf("Decide without tools = %+v", d)
		}
	}
}

func TestVisible(t *testing.T) {
	g := New(load(t, agent))
	var names []string
	for _, tl := range g.Visible() {
		names = append(names, tl.Name)
	}
	// Contract order; wipe (blocked first) and idle (no rule) hidden.
	if want := []string{"greet", "deploy", "gated"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("visible %v, want %v", names, want)
	}
}

// A rule with an effect the loader would refuse, in a contract value built
// by hand, blocks; a rule naming an undeclared tool decides nothing.
func TestHandMadeContract(t *testing.T) {
	c := &contract.Resolved{
		Tools: []contract.Tool{{Name: "x"}, {Name: "y"}},
		Policy: []contract.Rule{
			{ID: "bad", Tool: "x", Effect: "Allow"},
			{ID: "ghost", Tool: "z", Effect: "allow"},
			{ID: "ok", Tool: "y", Effect: "allow"},
		},
	}
	g := New(c)
	if d := g.Decide("x"); d.Effect != Block || d.RuleID != "bad" {
		t.Errorf("x: %+v", d)
	}
	if d := g.Decide("z"); d.Effect != Block || d.Rule != -1 {
		t.Errorf("z: %+v", d)
	}
	// Later edits to the contract value do not change the gate.
	c.Policy[2].Effect = "block"
	c.Tools = append(c.Tools, contract.Tool{Name: "z"})
	if d := g.Decide("y"); d.Effect != Allow {
		t.Errorf("y after edit: %+v", d)
	}
	if d := g.Decide("z"); d.Effect != Block {
		t.Errorf("z after edit: %+v", d)
	}
}

func TestDecisionJSON(t *testing.T) {
	b, err := json.Marshal(New(load(t, agent)).Decide("nope"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"effect":"block","rule":-1,"rule_id":"default","reason":"` + ReasonUnknownTool + `"}`; string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
}
