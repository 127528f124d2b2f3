package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/contract"
)

// rootContract is ProofGate's own contract, which .github/workflows/pr.yml
// and release.yml run (the project dogfoods itself).
var rootContract = filepath.Join("..", "..", ".proofgate", "contract.yaml")

var pinnedImage = regexp.MustCompile(`^[a-z0-9./_-]+(:[A-Za-z0-9_.-]+)?@sha256:[0-9a-f]{64}$`)

// The root contract passes `proofgate contract check`, every check runs in
// a Docker sandbox from a digest-pinned image, and it has the checks
// docs/release.md promises: gofmt, vet, staticcheck, the tests.
func TestRootContractPassesContractCheck(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"contract", "check", "--contract", rootContract}, &out, &errb); code != exitOK {
		t.Fatalf("contract check: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "valid (4 checks)") {
		t.Fatalf("contract check said %q", out.String())
	}
	r, err := contract.Load(rootContract, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range r.Checks {
		ids = append(ids, c.ID)
		if c.Runtime != "docker" || !pinnedImage.MatchString(c.Image) {
			t.Errorf("check %s: runtime %s image %q, want docker and a digest-pinned image", c.ID, c.Runtime, c.Image)
		}
	}
	for _, want := range []string{"gofmt", "vet", "staticcheck", "test"} {
		if !slices.Contains(ids, want) {
			t.Errorf("no check %q in %v", want, ids)
		}
	}
	if r.Approval.Required < 1 {
		t.Errorf("approval.required %d: a release must be approved", r.Approval.Required)
	}
}

// The same check refuses the root contract with a dangling reference, so
// the test above can fail.
func TestRootContractCheckRefusesABrokenCopy(t *testing.T) {
	b, err := os.ReadFile(rootContract)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b, []byte("depends_on: [vet]"), []byte("depends_on: [vett]"), 1)
	if bytes.Equal(bad, b) {
		t.Fatal("the root contract has no depends_on: [vet]")
	}
	p := filepath.Join(t.TempDir(), "contract.yaml")
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"contract", "check", "--contract", p}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "vett") {
		t.Fatalf("broken copy: exit %d, want %d\n%s%s", code, exitUsage, out.String(), errb.String())
	}
}
