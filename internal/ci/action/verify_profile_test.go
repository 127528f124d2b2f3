package action

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
)

// profileContract is processContract with a weaker "quick" profile (a
// shorter timeout) and "nightly" extending it.
const profileContract = processContract + `profiles:
  quick:
    checks:
      - id: readme
        timeout: 2s
  nightly:
    extends: quick
`

// TestVerifyRefusesRunOfAnotherProfile: a genuine, COMPLETE, approved run
// of the release tree for this repository, signed by the trusted key, but
// planned under the quick profile (a workflow, which a pull request can
// edit, picks the profile). The gate's default requires the base contract
// and refuses it; a gate naming another profile refuses it; only a gate
// naming quick accepts it.
func TestVerifyRefusesRunOfAnotherProfile(t *testing.T) {
	fx := newFixture(t, profileContract, nil)
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust

	quick := profiledBundle(t, fx, owner+"/"+repo, "quick")
	z, err := artifact.Zip(map[string][]byte{"x.bundle.tar.gz": quick})
	if err != nil {
		t.Fatal(err)
	}
	fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: ArtifactPrefix + fx.head, HeadSHA: fx.head, Data: z})

	// The artifact path, default input: the base contract is required.
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(bundle.ProfileMismatch) || vr.Outputs["reason"] != string(bundle.ProfileMismatch) {
		t.Fatalf("quick run, default profile input: %+v", vr)
	}
	// A profile the release commit's contract does not have cannot be
	// resolved, so no run can be bound to it.
	for p, want := range map[string]string{"nightly": string(bundle.ProfileMismatch), "release": string(gate.ReasonNoContract)} {
		fx.env["INPUT_PROFILE"] = p
		vr, err = fx.verify()
		mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
		if vr.Reason != want {
			t.Fatalf("quick run, profile %q required: %+v, want %s", p, vr, want)
		}
	}
	fx.env["INPUT_PROFILE"] = "quick"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vr.Accepted == nil || vr.Accepted.Run.Profile != "quick" {
		t.Fatalf("quick run, quick required: %+v", vr)
	}

	// Through input bundle: a base-contract run is accepted by the default
	// and refused by a gate that names quick.
	p := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := os.WriteFile(p, profiledBundle(t, fx, owner+"/"+repo, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	fx.env["INPUT_BUNDLE"] = p
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(bundle.ProfileMismatch) {
		t.Fatalf("base run, quick required: %+v", vr)
	}
	delete(fx.env, "INPUT_PROFILE")
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())

	// A malformed profile name is bad input, not a refusal of the bundle.
	for _, bad := range []string{"Quick", "../quick", "quick profile", "-x"} {
		fx.env["INPUT_PROFILE"] = bad
		vr, err = fx.verify()
		mustCode(t, vr.Code, ExitUsage, err, fx.log.String())
		if vr.Reason != "usage" {
			t.Fatalf("profile %q: %+v", bad, vr)
		}
	}
}
