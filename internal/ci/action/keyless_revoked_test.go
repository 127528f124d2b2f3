package action

import (
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

// TestVerifyRevokedIdentityInput (issue 25 class 3) runs the verify
// action's code path in process against the real Fulcio and timestamp
// authority: a keyless bundle of the pinned reusable workflow is accepted
// while the trust store's identity for it is active and refused
// (key-revoked) once that identity is revoked, although the
// signer-workflow, source-repo and issuer inputs (which the verify
// workflow always passes) name the same identity.
func TestVerifyRevokedIdentityInput(t *testing.T) {
	svc := sigstoretest.Start(t)
	fx := newFixtureBase(t, processContract, map[string]string{"SECURITY.md": "report to security@example.com\n"}, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	u, reqToken := svc.OIDC.RequestEndpoint(githubtest.Claims{
		Repository: owner + "/" + repo, Ref: "refs/pull/7/merge", SHA: fx.merge, EventName: "pull_request_review",
		WorkflowRef:    owner + "/" + repo + "/.github/workflows/proofgate.yml@refs/pull/7/merge",
		JobWorkflowRef: pinnedWorkflow,
	})
	delete(fx.env, "INPUT_SIGNING-KEY")
	fx.env["INPUT_SIGNING"] = SigningKeyless
	fx.env["INPUT_FULCIO-URL"], fx.env["INPUT_TSA-URL"], fx.env["INPUT_REKOR-URL"] = svc.FulcioURL, svc.TSAURL, ""
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = u, reqToken
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())

	releaseGate(t, fx, svc, pinnedWorkflow)
	store := trust.New()
	if err := store.AddIdentity(trust.Identity{ID: "reusable", Issuer: svc.OIDC.URL, SignerWorkflow: pinnedWorkflow,
		SourceRepo: owner + "/" + repo}); err != nil {
		t.Fatal(err)
	}
	fx.env["INPUT_TRUST-STORE"] = ".proofgate/trust-identities.json"
	path := filepath.Join(fx.ws, fx.env["INPUT_TRUST-STORE"])
	saveStore(t, store, path)
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())

	if err := store.RevokeIdentity("reusable", nil); err != nil {
		t.Fatal(err)
	}
	saveStore(t, store, path)
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != "key-revoked" || fx.outputs()["reason"] != "key-revoked" {
		t.Fatalf("revoked identity, signer-workflow input naming it: %+v", vr)
	}
}
