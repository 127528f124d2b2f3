package action

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

// keylessProducts is the products fixture, approved, signing keyless with
// the local Sigstore services.
func keylessProducts(t *testing.T, svc *sigstoretest.Services) *fixture {
	t.Helper()
	fx := newFixtureBase(t, productContract, map[string]string{".gitignore": "dist/\n"}, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	u, reqToken := svc.OIDC.RequestEndpoint(githubtest.Claims{Repository: owner + "/" + repo, Ref: "refs/pull/7/merge", SHA: fx.merge,
		EventName: "pull_request_review", WorkflowRef: owner + "/" + repo + "/.github/workflows/proofgate.yml@refs/pull/7/merge", JobWorkflowRef: pinnedWorkflow})
	delete(fx.env, "INPUT_SIGNING-KEY")
	fx.env["INPUT_SIGNING"] = SigningKeyless
	fx.env["INPUT_FULCIO-URL"], fx.env["INPUT_TSA-URL"], fx.env["INPUT_REKOR-URL"] = svc.FulcioURL, svc.TSAURL, ""
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = u, reqToken
	fx.env["INPUT_ATTEST"] = "true"
	return fx
}

// TestActionAttest: with attest: true a keyless COMPLETE run stores its
// companion in the fake GitHub's attestation store, found there by the
// product's digest (as gh attestation verify --repo looks it up); a token
// without attestations: write gives a warning naming it and a green job;
// key mode refuses the input.
func TestActionAttest(t *testing.T) {
	svc := sigstoretest.Start(t)
	fx := keylessProducts(t, svc)
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	out := fx.outputs()
	var products []struct{ SHA256 string }
	if err := json.Unmarshal([]byte(out["products"]), &products); err != nil || len(products) != 1 {
		t.Fatalf("products output %q", out["products"])
	}
	digest := "sha256:" + products[0].SHA256
	stored := fx.gh.Attestations(owner, repo, digest)
	comp, err := os.ReadFile(filepath.Join(fx.ws, out["sigstore-path"]))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || out["attestation-id"] == "" || res.AttestationID != stored[0].ID || !jsonEqual(stored[0].Bundle, comp) {
		t.Fatalf("stored %d attestations (outputs %v); want the companion once", len(stored), out)
	}
	// The store answers a lookup by the product's digest with the bundle,
	// as GitHub documents the reply.
	gh, err := ghapi.NewClient(context.Background(), fx.gh.Token, fx.gh.URL)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Attestations []struct {
			Bundle       json.RawMessage `json:"bundle"`
			RepositoryID int64           `json:"repository_id"`
		} `json:"attestations"`
	}
	if _, err := ghapi.Get(context.Background(), gh, "repos/"+owner+"/"+repo+"/attestations/"+digest+"?per_page=30", &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Attestations) != 1 || !jsonEqual(list.Attestations[0].Bundle, comp) {
		t.Fatalf("lookup by digest: %d attestations", len(list.Attestations))
	}
	if _, err := ghapi.Get(context.Background(), gh, "repos/"+owner+"/"+repo+"/attestations/sha256:"+strings.Repeat("0", 64), &list); err != nil || len(list.Attestations) != 0 {
		t.Fatalf("lookup of an unknown digest: %d attestations, %v", len(list.Attestations), err)
	}

	// Without attestations: write: a warning, the job and its evidence
	// unaffected.
	denied := keylessProducts(t, svc)
	denied.gh.Deny("attestations")
	res, err = denied.run()
	mustCode(t, res.Code, ExitOK, err, denied.log.String())
	if res.ArtifactID == 0 || res.AttestationID != 0 || !strings.Contains(denied.log.String(), "::warning title=ProofGate attestation not stored::") ||
		!strings.Contains(denied.log.String(), "permissions: attestations: write") {
		t.Fatalf("denied: %+v\n%s", res, denied.log.String())
	}

	// Key mode cannot attest.
	key := newFixture(t, processContract, nil)
	key.prEvent()
	key.env["INPUT_ATTEST"] = "true"
	res, _ = key.run()
	if res.Code != ExitUsage || !strings.Contains(key.log.String(), "needs signing: keyless") {
		t.Fatalf("key mode with attest: exit %d\n%s", res.Code, key.log.String())
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// TestVerifyFromAttestationStore: once the workflow artifact has expired,
// the release gate finds the run's signed statement in the attestation
// store by the product's digest and verifies it under the same policy,
// saying it did not replay the log (ADR 0040); another file, another
// signer and a stricter policy are refused; without a subject the expiry
// stands.
func TestVerifyFromAttestationStore(t *testing.T) {
	svc := sigstoretest.Start(t)
	fx := keylessProducts(t, svc)
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	product := fx.outputs()["products-dir"] + "/dist/app"
	fx.gh.ExpireArtifacts(owner, repo)
	releaseGate(t, fx, svc, pinnedWorkflow)

	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	miss := vr.Reason
	if miss != string(gate.ReasonExpired) && miss != string(gate.ReasonNotFound) {
		t.Fatalf("without a subject: %+v", vr)
	}

	fx.env["INPUT_SUBJECT"] = product
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	v := vr.BundleVerdict()
	if !v.StatementOnly || v.RunID != res.RunID || len(v.Products) != 1 || vr.Signer == "" || !strings.Contains(fx.log.String(), "was not replayed") {
		t.Fatalf("from the store: %+v\n%s", v, fx.log.String())
	}

	b, _ := os.ReadFile(filepath.Join(fx.ws, product))
	os.WriteFile(filepath.Join(fx.ws, "patched"), append(b, '!'), 0o644)
	for _, c := range []struct {
		name, key, value, reason, detail string
	}{
		{"a file the store knows nothing of", "INPUT_SUBJECT", "patched", miss, "holds no ProofGate statement"},
		{"another pinned signer", "INPUT_SIGNER-WORKFLOW", "OWNER/proofgate/.github/workflows/other.yml", "identity-mismatch", ""},
		{"two approvals", "INPUT_REQUIRE-APPROVALS", "2", "insufficient-approvals", ""},
		{"the release commit itself required", "INPUT_MATCH", "commit", "commit-mismatch", ""},
	} {
		old, had := fx.env[c.key]
		fx.env[c.key] = c.value
		vr, _ := fx.verify()
		if vr.Code != ExitRefused || vr.Reason != c.reason || !strings.Contains(vr.Detail, c.detail) {
			t.Errorf("%s: exit %d %s %q, want %s", c.name, vr.Code, vr.Reason, vr.Detail, c.reason)
		}
		if had {
			fx.env[c.key] = old
		} else {
			delete(fx.env, c.key)
		}
	}
}
