package action

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// foreignBundle makes a genuine, COMPLETE run of the release tree (a clone
// at the tested merge) that says it ran for repository repoFull, approved
// by mallory on the command line, and exports it with the fixture's key.
func foreignBundle(t *testing.T, fx *fixture, repoFull string) []byte {
	t.Helper()
	return profiledBundle(t, fx, repoFull, "")
}

// profiledBundle is foreignBundle with the run planned under the contract
// profile ("" = the base contract).
func profiledBundle(t *testing.T, fx *fixture, repoFull, profile string) []byte {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, fx.tmp, "clone", "-q", fx.ws, clone)
	git(t, clone, "checkout", "-q", "--detach", fx.merge)
	state := t.TempDir()
	c, err := contract.Load(filepath.Join(clone, ".proofgate", "contract.yaml"), profile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: clone, StateDir: state, Contract: c, Origin: "file:.proofgate/contract.yaml", Repo: repoFull})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: clone, StateDir: state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Decide(ctx, run.DecisionOptions{Actor: "mallory", Fresh: run.Freshness{RepoDir: clone, StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	dir := r.Dir
	r.Close()
	kp := filepath.Join(t.TempDir(), "k.pem")
	if err := os.WriteFile(kp, []byte(fx.keyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := key.Load(kp)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := bundle.Export(dir, s, &buf, bundle.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestVerifyRefusesBundleOfAnotherRepository: an organisation-wide key
// (no identity in the trust store) signed a genuine bundle in another
// repository for the same tree; anyone who can upload an artifact to this
// repository (a fork's pull_request workflow can) offers it to the release
// gate. The gate releases this repository: the run must have been for it.
func TestVerifyRefusesBundleOfAnotherRepository(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	st, err := trust.Load(fx.trust)
	if err != nil {
		t.Fatal(err)
	}
	st.Keys[0].Identity = "" // one key for every repository of the org
	if err := st.Save(fx.trust); err != nil {
		t.Fatal(err)
	}
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust

	other := foreignBundle(t, fx, "acme/other")
	z, err := artifact.Zip(map[string][]byte{"x.bundle.tar.gz": other})
	if err != nil {
		t.Fatal(err)
	}
	fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: ArtifactPrefix + fx.head, HeadSHA: fx.head, Data: z})
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(bundle.RepoMismatch) {
		t.Fatalf("bundle of acme/other: %+v", vr)
	}

	// The same through input bundle, and a bundle without a repository.
	for name, data := range map[string][]byte{"other": other, "none": foreignBundle(t, fx, "")} {
		p := filepath.Join(t.TempDir(), name+".tar.gz")
		os.WriteFile(p, data, 0o644)
		fx.env["INPUT_BUNDLE"] = p
		vr, err = fx.verify()
		mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
		if vr.Reason != string(bundle.RepoMismatch) {
			t.Fatalf("%s: %+v", name, vr)
		}
	}
	// This repository's own bundle of the same tree is accepted.
	fx.env["INPUT_BUNDLE"] = func() string {
		p := filepath.Join(t.TempDir(), "own.tar.gz")
		os.WriteFile(p, foreignBundle(t, fx, owner+"/"+repo), 0o644)
		return p
	}()
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
}
