package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every refusal reason of the module (a string constant of a type whose
// name ends in Reason, in any package's non-test code) is documented in
// docs/ in backticks: reasons are output (--json "reason", annotations,
// action outputs), and a reader must be able to look each one up.
func TestEveryReasonDocumented(t *testing.T) {
	docs := readDocs(t)
	n := 0
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != "../..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		for name, val := range reasonConstants(t, p) {
			n++
			if !strings.Contains(docs, "`"+val+"`") {
				t.Errorf("%s: %s (%q) is documented nowhere in docs/", strings.TrimPrefix(p, "../../"), name, val)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 150 {
		t.Fatalf("found %d reasons: the walk did not read the module", n)
	}
}

// readDocs is every Markdown file under docs/, concatenated.
func readDocs(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir("../../docs", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		data, err := os.ReadFile(p)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// reasonConstants are the string constants of a …Reason type in file p.
func reasonConstants(t *testing.T, p string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if !reasonType(vs.Type) {
				continue
			}
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[vs.Names[i].Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
	}
	return out
}

func reasonType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return strings.HasSuffix(x.Name, "Reason")
	case *ast.SelectorExpr:
		return strings.HasSuffix(x.Sel.Name, "Reason")
	}
	return false
}
