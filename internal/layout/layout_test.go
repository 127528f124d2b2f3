package layout

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/proofgate/proofgate/"

// testTier is the tier of "Tests and tools": above every other, and
// importable by none of them.
const testTier = 100

var (
	tierHeading = regexp.MustCompile(`^### Tier (\d+): `)
	packageRow  = regexp.MustCompile("^\\| `([a-z0-9/]+)` \\|")
)

// tiers reads docs/ARCHITECTURE.md's "The tree, by tier": package -> tier.
// A package placed twice is an error.
func tiers(doc []byte) (map[string]int, error) {
	out := map[string]int{}
	tier, in := -1, false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "## The tree, by tier":
			in = true
		case strings.HasPrefix(line, "## "):
			in = false
		case !in:
		case line == "### Tests and tools":
			tier = testTier
		case tierHeading.MatchString(line):
			tier, _ = strconv.Atoi(tierHeading.FindStringSubmatch(line)[1])
		case packageRow.MatchString(line):
			pkg := packageRow.FindStringSubmatch(line)[1]
			if _, dup := out[pkg]; dup || tier < 0 {
				return nil, fmt.Errorf("%s: placed twice, or outside a tier", pkg)
			}
			out[pkg] = tier
		}
	}
	return out, sc.Err()
}

// imports lists every package of the module with its non-test imports
// inside the module, module-relative.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, ok := strings.CutPrefix(f[0], module)
		if !ok {
			continue
		}
		pkgs[pkg] = nil
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				pkgs[pkg] = append(pkgs[pkg], rel)
			}
		}
	}
	return pkgs
}

// placedTiers reads docs/ARCHITECTURE.md's tiers: package -> tier.
func placedTiers(t *testing.T) map[string]int {
	t.Helper()
	doc, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	placed, err := tiers(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) < 50 {
		t.Fatalf("read %d packages from docs/ARCHITECTURE.md; the tier tables did not parse", len(placed))
	}
	return placed
}

// TestTiers: every package is placed in one tier of docs/ARCHITECTURE.md,
// every row names a package, and no package imports one of a higher tier
// or, outside tests, a test package.
func TestTiers(t *testing.T) {
	placed := placedTiers(t)
	pkgs := imports(t)
	for pkg := range placed {
		if _, ok := pkgs[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md places %s, which is not a package", pkg)
		}
	}
	for pkg, deps := range pkgs {
		tier, ok := placed[pkg]
		if !ok {
			t.Errorf("%s is in no tier: add its row to docs/ARCHITECTURE.md, \"The tree, by tier\"", pkg)
			continue
		}
		for _, dep := range deps {
			switch dt, ok := placed[dep]; {
			case !ok:
			case tier != testTier && dt == testTier:
				t.Errorf("%s imports the test package %s", pkg, dep)
			case dt > tier:
				t.Errorf("%s (tier %d) imports %s (tier %d): a lower tier may not depend on a higher one", pkg, tier, dep, dt)
			}
		}
	}
}

// The parser reads rows only inside the section, and refuses a package
// placed twice.
func TestTiersParse(t *testing.T) {
	doc := "| `kernel/x` | before |\n## The tree, by tier\n### Tier 0: helpers\n| package | holds |\n|---|---|\n| `kernel/a` | a |\n" +
		"### Tier 2: verifier\n| `bundle` | b |\n### Tests and tools\n| `internal/t` | t |\n## Words\n| `kernel/y` | after |\n"
	got, err := tiers([]byte(doc))
	if err != nil || len(got) != 3 || got["kernel/a"] != 0 || got["bundle"] != 2 || got["internal/t"] != testTier {
		t.Fatalf("tiers = %v, %v", got, err)
	}
	if _, err := tiers([]byte(doc + "## The tree, by tier\n### Tier 1: x\n| `bundle` | again |\n")); err == nil {
		t.Fatal("a package placed twice was accepted")
	}
}

// dataPackages are outside internal/ for a reason other than an API: the
// example workflows embed the files beside them, and only the package in
// their own folder can.
var dataPackages = map[string]bool{"examples": true}

// TestPublicPackages: outside internal/ and cmd/ live only the packages a
// third-party verifier needs (the helpers, the model and the verifier:
// tiers 0-2), and each is imported by some package other than the command
// line; the writer, features, adapters and applications are internal.
func TestPublicPackages(t *testing.T) {
	placed := placedTiers(t)
	pkgs := imports(t)
	importers := map[string][]string{}
	for pkg, deps := range pkgs {
		for _, dep := range deps {
			importers[dep] = append(importers[dep], pkg)
		}
	}
	public := 0
	for pkg := range pkgs {
		if internalPath(pkg) || strings.HasPrefix(pkg, "cmd/") || dataPackages[pkg] {
			continue
		}
		public++
		if tier, ok := placed[pkg]; ok && tier > 2 {
			t.Errorf("%s (tier %d) is outside internal/: only tiers 0-2 are public", pkg, tier)
		}
		if onlyCommandLine(importers[pkg]) {
			t.Errorf("%s is outside internal/ but only the command line imports it: move it under internal/", pkg)
		}
	}
	if public < 10 {
		t.Fatalf("found %d public packages; go list did not list the module", public)
	}
}

func internalPath(pkg string) bool {
	return pkg == "internal" || strings.HasPrefix(pkg, "internal/") || strings.Contains(pkg, "/internal/") || strings.HasSuffix(pkg, "/internal")
}

func onlyCommandLine(importers []string) bool {
	for _, p := range importers {
		if !strings.HasPrefix(p, "cmd/") {
			return false
		}
	}
	return true
}
