package action

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/acttest"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
)

// Under act: the run step uploads to act's real artifact server (it keeps
// the bundle, and the read-back passes although act misreports the size),
// and the verify step, with no REST artifacts API to find it by, verifies
// the bundle file given as input bundle.
func TestActUploadThenVerifyBundleInput(t *testing.T) {
	results, dir, tok := acttest.Start(t)
	fx := newFixture(t, processContract, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	fx.env["ACTIONS_RESULTS_URL"], fx.env["ACTIONS_RUNTIME_TOKEN"] = results, tok
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if log := fx.log.String(); !strings.Contains(log, "read back through the artifact service") || !strings.Contains(log, "nektos/act lists") {
		t.Fatalf("upload log:\n%s", log)
	}
	name := res.ArtifactName
	z, err := os.ReadFile(filepath.Join(dir, acttest.RunID, name, name+".zip"))
	if err != nil {
		t.Fatalf("act holds no artifact %s: %v", name, err)
	}
	files, err := artifact.Unzip(z, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(fx.tmp, "downloaded")
	if err := os.MkdirAll(got, 0o755); err != nil {
		t.Fatal(err)
	}
	var archive string
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(got, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(n, ".tar.gz") {
			archive = filepath.Join(got, n)
		}
	}

	m := fx.release()
	fx.env["GITHUB_SHA"] = m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	// No REST artifacts API (act, and runners whose API differs).
	fx.gh.Fail("/actions/artifacts", 404, "", -1)
	before := fx.gh.Count("GET", "/actions/artifacts")
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitEnv, err, fx.log.String())
	if vr.Reason != string(gate.ReasonGitHubAPI) || !strings.Contains(vr.Detail, "input bundle") {
		t.Fatalf("without input bundle: %+v", vr)
	}
	fx.env["INPUT_BUNDLE"] = archive
	after := fx.gh.Count("GET", "/actions/artifacts")
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vr.RunID != res.RunID || vr.Accepted == nil || after == before || fx.gh.Count("GET", "/actions/artifacts") != after {
		t.Fatalf("bundle input: %+v (artifact API calls %d, %d, %d)", vr, before, after, fx.gh.Count("GET", "/actions/artifacts"))
	}
	// A tampered file is refused all the same.
	b, _ := os.ReadFile(archive)
	b[len(b)/2] ^= 1
	os.WriteFile(archive, b, 0o644)
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
}
