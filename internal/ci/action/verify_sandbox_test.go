package action

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
)

// TestVerifyRequireSandbox: a genuine bundle of a run whose checks ran as
// host processes is accepted by default, naming them in the unsandboxed
// output and a warning; input require-sandbox: true refuses it with
// unsandboxed-check; any other value is bad input.
func TestVerifyRequireSandbox(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	p := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := os.WriteFile(p, profiledBundle(t, fx, owner+"/"+repo, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	fx.env["INPUT_BUNDLE"] = p

	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vr.Outputs["unsandboxed"] != "readme,guard" || !strings.Contains(fx.log.String(), "::warning title=ProofGate checks ran unsandboxed::") {
		t.Fatalf("not required: outputs %v\n%s", vr.Outputs, fx.log.String())
	}
	if s := fx.summary(); !strings.Contains(s, "| unsandboxed checks | readme, guard |") {
		t.Fatalf("summary lists no unsandboxed checks:\n%s", s)
	}
	// The notice names the commit as a commit and the tree it matched by
	// (match: tree, the default), not the commit as "tree".
	if want := "::notice title=ProofGate evidence accepted::run " + vr.RunID + " for commit " + m + ", matched by its tree " + vr.Tree; !strings.Contains(fx.log.String(), want) {
		t.Fatalf("want notice %q in\n%s", want, fx.log.String())
	}

	fx.env["INPUT_REQUIRE-SANDBOX"] = "true"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(bundle.UnsandboxedCheck) || vr.Outputs["reason"] != string(bundle.UnsandboxedCheck) ||
		!strings.Contains(fx.log.String(), "2 of 2 checks did not run in the docker sandbox: readme (runtime process), guard (runtime process)") {
		t.Fatalf("required: %+v\n%s", vr, fx.log.String())
	}

	for _, bad := range []string{"yes", "TRUE", "1"} {
		fx.env["INPUT_REQUIRE-SANDBOX"] = bad
		vr, err = fx.verify()
		mustCode(t, vr.Code, ExitUsage, err, fx.log.String())
		if vr.Reason != "usage" {
			t.Fatalf("require-sandbox %q: %+v", bad, vr)
		}
	}
}
