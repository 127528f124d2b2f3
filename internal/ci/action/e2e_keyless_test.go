package action

// The keyless end-to-end case, run by scripts/e2e.sh: the action image
// signs keyless against a real Fulcio and timestamp authority on 127.0.0.1
// (internal/sigstoretest), with the OIDC token the fake runner endpoint
// issues, and the verify image checks it against their trusted root with
// the reusable workflow's identity pinned.
//
// The build tag keeps it out of builds until internal/sigstoretest and the
// OIDC issuer of internal/githubtest exist (merge removes it).

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/internal/testimage"
)

const (
	// pinnedWorkflow is the reusable workflow at the ref the caller names:
	// what the token's job_workflow_ref says, and what the gate pins.
	pinnedWorkflow = "OWNER/proofgate/.github/workflows/proofgate.yml@refs/tags/v1"
	// trustedRootRel is where the test puts the services' trusted root in
	// the release checkout.
	trustedRootRel = ".proofgate/trusted_root.json"
)

// keylessFixture is a PR approved by the maintainer, whose run signs
// keyless with a token whose job_workflow_ref is jobWorkflowRef.
func keylessFixture(t *testing.T, svc *sigstoretest.Services, jobWorkflowRef string) *fixture {
	t.Helper()
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := strings.Replace(dockerContract, "IMAGE", helper, 1)
	fx := newFixtureBase(t, c, map[string]string{"SECURITY.md": "report to security@example.com\n"}, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	u, reqToken := svc.OIDC.RequestEndpoint(githubtest.Claims{
		Repository:     owner + "/" + repo,
		Ref:            "refs/pull/7/merge",
		SHA:            fx.merge,
		EventName:      "pull_request_review",
		WorkflowRef:    owner + "/" + repo + "/.github/workflows/proofgate.yml@refs/pull/7/merge",
		JobWorkflowRef: jobWorkflowRef,
	})
	delete(fx.env, "INPUT_SIGNING-KEY")
	fx.env["INPUT_SIGNING"] = SigningKeyless
	fx.env["INPUT_FULCIO-URL"] = svc.FulcioURL
	fx.env["INPUT_TSA-URL"] = svc.TSAURL
	fx.env["INPUT_REKOR-URL"] = "" // no transparency log runs here
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = u, reqToken
	return fx
}

// releaseGate turns fx into the release job for the merge commit, with
// the trusted root in the checkout and signer-workflow pinned to pin.
func releaseGate(t *testing.T, fx *fixture, svc *sigstoretest.Services, pin string) {
	t.Helper()
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["GITHUB_EVENT_PATH"] = filepath.Join(fx.wf, "push.json")
	writeFile(t, fx.env["GITHUB_EVENT_PATH"], `{"ref":"refs/tags/v1.0.0","after":"`+m+`"}`)
	writeFile(t, filepath.Join(fx.ws, trustedRootRel), string(svc.TrustedRoot))
	for _, k := range []string{"INPUT_SIGNING", "INPUT_FULCIO-URL", "INPUT_TSA-URL", "INPUT_REKOR-URL", idTokenURLEnv, idTokenTokenEnv} {
		delete(fx.env, k)
	}
	// Keyless bundles need no key: the trust store does not exist.
	fx.env["INPUT_TRUST-STORE"] = ".proofgate/no-such-trust.json"
	fx.env["INPUT_MATCH"] = "tree"
	fx.env["INPUT_TRUSTED-ROOT"] = trustedRootRel
	fx.env["INPUT_SIGNER-WORKFLOW"] = pin
	fx.env["INPUT_CERTIFICATE-OIDC-ISSUER"] = svc.OIDC.URL
	fx.env["INPUT_SOURCE-REPO"] = owner + "/" + repo
}

func TestE2EKeyless(t *testing.T) {
	image := e2eImage(t)
	svc := sigstoretest.Start(t)

	// 1. The reusable workflow's job signs keyless: COMPLETE, the archive
	// with its Sigstore material and the companion uploaded.
	fx := keylessFixture(t, svc, pinnedWorkflow)
	wantCode(t, fx, fx.dockerRun(image), ExitOK)
	out := fx.outputs()
	if out["state"] != "COMPLETE" || out["artifact-id"] == "" || !strings.HasSuffix(out["signer"], "/"+pinnedWorkflow) {
		t.Fatalf("outputs %v\n%s", out, fx.log.String())
	}
	runID := out["run-id"]
	zipData, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head)
	if !ok {
		t.Fatalf("no artifact uploaded\n%s", fx.log.String())
	}
	files, err := artifact.Unzip(zipData, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	archiveName, compName := runID+".bundle.tar.gz", runID+".bundle.sigstore.json"
	members, err := artifact.AttestationMembers(files[archiveName])
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || !bytes.Equal(files[compName], members[envelope.MaterialFile]) || len(files[compName]) == 0 {
		t.Fatalf("artifact files %d; companion is the archive's material: %v", len(files), bytes.Equal(files[compName], members[envelope.MaterialFile]))
	}

	// 2. The release gate, identity pinned: accepted, with a signed VSA
	// whose policy names the pinned identity and the trusted root.
	releaseGate(t, fx, svc, pinnedWorkflow)
	gateKey := keytest.New(t)
	pemKey, err := os.ReadFile(gateKey.Path)
	if err != nil {
		t.Fatal(err)
	}
	fx.env["INPUT_VSA-KEY"] = string(pemKey)
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitOK)
	vo := fx.outputs()
	if vo["verdict"] != "accepted" || vo["run-id"] != runID || !strings.HasSuffix(vo["signer"], "/"+pinnedWorkflow) || vo["vsa"] == "" {
		t.Fatalf("verify outputs %v\n%s", vo, fx.log.String())
	}
	st := openVSA(t, fx, vo["vsa"], gateKey)
	pol := st.Policy()
	if !st.Passed() || pol.Identities["signer-workflow"] != pinnedWorkflow || len(pol.Trust) != 1 || pol.Trust[0].Name != "trusted_root.json" {
		t.Fatalf("VSA policy %+v", pol)
	}
	delete(fx.env, "INPUT_VSA-KEY")

	// 3. The same bundle, another ref pinned: identity-mismatch.
	fx.env["INPUT_SIGNER-WORKFLOW"] = strings.Replace(pinnedWorkflow, "refs/tags/v1", "refs/tags/v2", 1)
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitRefused)
	if vo := fx.outputs(); vo["reason"] != "identity-mismatch" {
		t.Fatalf("other ref pinned: outputs %v\n%s", vo, fx.log.String())
	}

	// 4. The companion changed by one byte of whitespace (still a valid
	// Sigstore bundle): not the archive's material byte for byte, refused.
	fx.env["INPUT_SIGNER-WORKFLOW"] = pinnedWorkflow
	fx.gh.TamperBlob(ArtifactPrefix+fx.head, rezip(t, zipData, func(f map[string][]byte) {
		f[compName] = bytes.Replace(f[compName], []byte(`"mediaType"`), []byte(`"mediaType" `), 1)
	}))
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitRefused)
	if vo := fx.outputs(); vo["reason"] != string(gate.ReasonCompanion) {
		t.Fatalf("changed companion: outputs %v\n%s", vo, fx.log.String())
	}

	// 5. No signer-workflow input: the trust store's identity pins the
	// signer (accepted), and once that identity is revoked the same
	// bundle is refused.
	fx.gh.TamperBlob(ArtifactPrefix+fx.head, zipData)
	delete(fx.env, "INPUT_SIGNER-WORKFLOW")
	delete(fx.env, "INPUT_SOURCE-REPO")
	delete(fx.env, "INPUT_CERTIFICATE-OIDC-ISSUER")
	store := trust.New()
	if err := store.AddIdentity(trust.Identity{ID: "reusable", Issuer: svc.OIDC.URL, SignerWorkflow: pinnedWorkflow,
		SourceRepo: owner + "/" + repo, Status: trust.Active}); err != nil {
		t.Fatal(err)
	}
	fx.env["INPUT_TRUST-STORE"] = ".proofgate/trust-identities.json"
	saveStore(t, store, filepath.Join(fx.ws, fx.env["INPUT_TRUST-STORE"]))
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitOK)
	if vo := fx.outputs(); vo["verdict"] != "accepted" || !strings.HasSuffix(vo["signer"], "/"+pinnedWorkflow) {
		t.Fatalf("trust store identity: outputs %v\n%s", vo, fx.log.String())
	}
	if err := store.RevokeIdentity("reusable", nil); err != nil {
		t.Fatal(err)
	}
	saveStore(t, store, filepath.Join(fx.ws, fx.env["INPUT_TRUST-STORE"]))
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitRefused)
	if vo := fx.outputs(); vo["reason"] != "key-revoked" {
		t.Fatalf("revoked identity: outputs %v\n%s", vo, fx.log.String())
	}

	// 6. Issue 25 class 3: the signer-workflow input naming the revoked
	// identity (the verify action always passes it) does not bring it back.
	fx.env["INPUT_SIGNER-WORKFLOW"] = pinnedWorkflow
	fx.env["INPUT_CERTIFICATE-OIDC-ISSUER"] = svc.OIDC.URL
	fx.env["INPUT_SOURCE-REPO"] = owner + "/" + repo
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitRefused)
	if vo := fx.outputs(); vo["reason"] != "key-revoked" {
		t.Fatalf("revoked identity, signer-workflow input naming it: outputs %v\n%s", vo, fx.log.String())
	}
}

// saveStore writes store to path (replacing it), as a release checkout
// holds trust.json.
func saveStore(t *testing.T, store *trust.Store, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(path); err != nil {
		t.Fatal(err)
	}
}

// A modified caller runs the action itself (not the reusable workflow):
// the certificate names the caller's own workflow, and the gate pinning the
// reusable workflow refuses it.
func TestE2EKeylessModifiedCallerRefused(t *testing.T) {
	image := e2eImage(t)
	svc := sigstoretest.Start(t)
	own := owner + "/" + repo + "/.github/workflows/proofgate.yml@refs/pull/7/merge"
	fx := keylessFixture(t, svc, own)
	wantCode(t, fx, fx.dockerRun(image), ExitOK)
	if s := fx.outputs()["signer"]; !strings.HasSuffix(s, "/"+own) {
		t.Fatalf("signer %q, want the caller's workflow", s)
	}
	releaseGate(t, fx, svc, pinnedWorkflow)
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitRefused)
	vo := fx.outputs()
	if vo["verdict"] != "refused" || vo["reason"] != "identity-mismatch" {
		t.Fatalf("verify outputs %v\n%s", vo, fx.log.String())
	}
	if _, err := os.Stat(filepath.Join(fx.ws, trustedRootRel)); err != nil {
		t.Fatal(err)
	}
}
