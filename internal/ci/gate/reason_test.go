package gate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/proofgate/proofgate/bundle"
)

// Every Reason constant of gate.go is in Reasons() once, the registry
// holds nothing else, and no reason of the verify step spells a bundle
// refusal's reason: the action's reason output names one cause.
func TestReasonsRegistry(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "gate.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[Reason]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for _, v := range vs.Values {
				s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				declared[Reason(s)] = true
			}
		}
	}
	if len(declared) < 9 {
		t.Fatalf("read %d Reason constants from gate.go", len(declared))
	}
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if seen[r] || !declared[r] {
			t.Errorf("%s: registered twice, or not a Reason constant of gate.go", r)
		}
		seen[r] = true
	}
	for r := range declared {
		if !seen[r] {
			t.Errorf("Reason %s is missing from Reasons()", r)
		}
	}
	for _, b := range bundle.Reasons() {
		if seen[Reason(b)] {
			t.Errorf("%s is both a gate and a bundle reason", b)
		}
	}
}
