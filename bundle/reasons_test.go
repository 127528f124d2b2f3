package bundle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/exit"
)

// reasonConsts reads the package's own source: the value of every
// constant declared with type Reason (or Reason(x) of another package's
// reason, whose value the registry test checks by the constant's name).
func reasonConsts(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Reason" {
					for _, n := range vs.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names
}

// Every Reason constant of the package is in the registry, once; the
// registry holds nothing else; each is a refusal.
func TestReasonsRegistry(t *testing.T) {
	declared := reasonConsts(t)
	if len(declared) < 35 {
		t.Fatalf("read %d Reason constants: the source did not parse", len(declared))
	}
	registered := map[string]bool{}
	for _, r := range Reasons() {
		name, ok := reasonNames[r]
		switch {
		case !ok:
			t.Errorf("%s is registered, and reasonNames does not name its constant", r)
		case registered[name]:
			t.Errorf("%s is registered twice", r)
		}
		registered[name] = true
		if c, _ := exit.Of(&VerifyError{Reason: r}); c != exit.Refused {
			t.Errorf("%s: class %v", r, c)
		}
	}
	for name := range declared {
		if !registered[name] {
			t.Errorf("Reason constant %s is missing from the registry (reasons.go)", name)
		}
	}
	if len(reasonNames) != len(Reasons()) {
		t.Errorf("reasonNames names %d reasons, the registry has %d", len(reasonNames), len(Reasons()))
	}
}

// reasonNames names each registered reason's constant; TestReasonsRegistry
// and the compiler keep it honest (a renamed constant fails to compile
// here).
var reasonNames = map[Reason]string{
	ArchiveUnsafe: "ArchiveUnsafe", ArchiveTooLarge: "ArchiveTooLarge", Malformed: "Malformed", MissingFile: "MissingFile",
	UnknownKey: "UnknownKey", MaterialMismatch: "MaterialMismatch", CertificateInvalid: "CertificateInvalid",
	TimestampInvalid: "TimestampInvalid", TlogInvalid: "TlogInvalid", IdentityMismatch: "IdentityMismatch",
	SignatureInvalid: "SignatureInvalid", KeyRevoked: "KeyRevoked", KeyNotValid: "KeyNotValid",
	SigningTimeImplausible: "SigningTimeImplausible", ExtraFile: "ExtraFile", SubjectMismatch: "SubjectMismatch",
	ChainBroken: "ChainBroken", AuditFailed: "AuditFailed", ImplementationMismatch: "ImplementationMismatch",
	ShardMismatch: "ShardMismatch", NotComplete: "NotComplete", ChainMismatch: "ChainMismatch",
	PredicateMismatch: "PredicateMismatch", CheckpointInvalid: "CheckpointInvalid", CheckpointRewritten: "CheckpointRewritten",
	CheckpointTruncated: "CheckpointTruncated", CheckpointForeignRun: "CheckpointForeignRun", CommitMismatch: "CommitMismatch",
	TreeMismatch: "TreeMismatch", RepoMismatch: "RepoMismatch", ProfileMismatch: "ProfileMismatch",
	ContractMismatch: "ContractMismatch", DirtySource: "DirtySource", UnsandboxedCheck: "UnsandboxedCheck",
	InsufficientApprovals: "InsufficientApprovals", RuleNotSatisfied: "RuleNotSatisfied",
	AuthorizationMissing: "AuthorizationMissing", AuthorizationRejected: "AuthorizationRejected", NotAProduct: "NotAProduct",
}

// docs/SPEC.md §7's verification order names every registered reason.
func TestSpecNamesEveryReason(t *testing.T) {
	b, err := os.ReadFile("../docs/SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "### Verification order")
	if !ok {
		t.Fatal("docs/SPEC.md has no \"Verification order\"")
	}
	s, _, _ = strings.Cut(s, "\n### ")
	for _, r := range Reasons() {
		if !strings.Contains(s, "`"+string(r)+"`") {
			t.Errorf("docs/SPEC.md's verification order does not name `%s`", r)
		}
	}
}

// Every failure vector expects a registered reason (or acceptance).
func TestVectorsExpectRegisteredReasons(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(vectorDir, "*.txtar"))
	if err != nil || len(paths) < 20 {
		t.Fatalf("vectors: %d, %v", len(paths), err)
	}
	for _, p := range paths {
		vc, err := parseVector(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if vc.expect != "accepted" && !slices.Contains(Reasons(), Reason(vc.expect)) {
			t.Errorf("%s expects %s, which is not a registered reason", filepath.Base(p), strconv.Quote(vc.expect))
		}
	}
}
