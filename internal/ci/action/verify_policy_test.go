package action

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
)

// Input policy: the gate's requirements as a checked-in file (ADR 0049).
// Its members stand for their inputs; a member and its input both given,
// a member that describes one release, an unsafe opt-out, an unknown or
// duplicate member, a path out of the workspace and trust material other
// than the pinned are refused as unusable input, never "the last one
// wins".
func TestVerifyPolicyInput(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_POLICY"] = "gate.policy.json"
	trustBytes, err := os.ReadFile(fx.trust)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(fx.ws, "policy.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(trustBytes)
	trustDigest := hex.EncodeToString(sum[:])

	for _, c := range []struct {
		name, doc string
		inputs    map[string]string
		code      int
		reason    string // the refusal's reason, or "" when accepted
		detail    string // in the refusal's detail
	}{
		{"the policy's approvals apply", `{"bundle":{"require_approvals":1,"profile":""}}`, nil, ExitOK, "", ""},
		{"stricter approvals refuse", `{"bundle":{"require_approvals":2}}`, nil, ExitRefused, string(bundle.InsufficientApprovals), ""},
		{"stricter sandbox refuses", `{"bundle":{"require_approvals":1,"require_sandbox":true}}`, nil, ExitRefused, string(bundle.UnsandboxedCheck), ""},
		{"an unsatisfied rule refuses", `{"bundle":{"require_approvals":1,"require_rules":["release"]}}`, nil, ExitRefused, string(bundle.RuleNotSatisfied), ""},
		{"an input at its default is not given", `{"bundle":{"require_approvals":2}}`, map[string]string{"INPUT_REQUIRE-APPROVALS": "1"}, ExitRefused, string(bundle.InsufficientApprovals), ""},
		{"member and input both given", `{"bundle":{"require_approvals":0}}`, map[string]string{"INPUT_REQUIRE-APPROVALS": "2"}, ExitUsage, string(gate.ReasonUsage), "input require-approvals is given too"},
		{"list member and input both given", `{"bundle":{"require_approvals":1,"require_rules":["release"]}}`, map[string]string{"INPUT_REQUIRE-RULE": "other"}, ExitUsage, string(gate.ReasonUsage), "input require-rule is given too"},
		{"products in two places", `{"bundle":{"require_approvals":1,"require_subjects":["` + strings.Repeat("a", 64) + `"]}}`, map[string]string{"INPUT_SUBJECT": "README.md"}, ExitUsage, string(gate.ReasonUsage), "input subject is given too"},
		{"a product the run did not make", `{"bundle":{"require_approvals":1,"require_subjects":["` + strings.Repeat("a", 64) + `"]}}`, nil, ExitRefused, string(bundle.NotAProduct), ""},
		{"the release commit", `{"bundle":{"require_approvals":1,"commit":"` + strings.Repeat("a", 40) + `"}}`, nil, ExitUsage, string(gate.ReasonUsage), "sets commit, which it cannot"},
		{"a contract hash", `{"bundle":{"require_approvals":1,"contract_hash":"sha256:` + strings.Repeat("a", 64) + `"}}`, nil, ExitUsage, string(gate.ReasonUsage), "sets contract_hash, which it cannot"},
		{"an unsafe opt-out", `{"bundle":{"require_approvals":1,"unsafe":["any-contract"]}}`, nil, ExitUsage, string(gate.ReasonUsage), "no unsafe opt-out"},
		{"an unknown member", `{"bundle":{"require_approvals":1,"approvals":0}}`, nil, ExitUsage, string(gate.ReasonUsage), "approvals"},
		{"a duplicate member", `{"bundle":{"require_approvals":2,"require_approvals":0}}`, nil, ExitUsage, string(gate.ReasonUsage), "duplicate"},
		{"a case-variant member", `{"bundle":{"require_approvals":2,"Require_Approvals":0}}`, nil, ExitUsage, string(gate.ReasonUsage), ""},
		{"an unknown identity", `{"bundle":{"require_approvals":1},"identities":{"signer":"x"}}`, nil, ExitUsage, string(gate.ReasonUsage), `"signer" is not one of`},
		{"an identity without a trusted root", `{"bundle":{"require_approvals":1},"identities":{"signer-workflow":"acme/widget/.github/workflows/release.yml"}}`, nil, ExitUsage, string(gate.ReasonUsage), "trusted-root"},
		{"the pinned trust store", `{"bundle":{"require_approvals":1},"trust":[{"name":"trust.json","digest":{"sha256":"` + trustDigest + `"}}]}`, nil, ExitOK, "", ""},
		{"another trust store", `{"bundle":{"require_approvals":1},"trust":[{"name":"trust.json","digest":{"sha256":"` + strings.Repeat("0", 64) + `"}}]}`, nil, ExitUsage, string(gate.ReasonUsage), "not the one its policy names"},
		{"trust material not given", `{"bundle":{"require_approvals":1},"trust":[{"name":"root.json","digest":{"sha256":"` + trustDigest + `"}}]}`, nil, ExitUsage, string(gate.ReasonUsage), "neither input trust-store nor trusted-root"},
		{"out of the workspace", ``, map[string]string{"INPUT_POLICY": "../gate.policy.json"}, ExitUsage, string(gate.ReasonUsage), "not a clean path"},
		{"missing", ``, map[string]string{"INPUT_POLICY": "none.policy.json"}, ExitUsage, string(gate.ReasonUsage), "input policy"},
		{"oversized", `{"bundle":{"require_approvals":1}}` + strings.Repeat(" ", vsa.MaxPayload), nil, ExitUsage, string(gate.ReasonUsage), "larger than 1048576 bytes"},
		{"a directory", ``, map[string]string{"INPUT_POLICY": "policy.d"}, ExitUsage, string(gate.ReasonUsage), "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.doc != "" {
				if err := os.WriteFile(filepath.Join(fx.ws, "gate.policy.json"), []byte(c.doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range c.inputs {
				old, had := fx.env[k]
				fx.env[k] = v
				defer func() {
					if had {
						fx.env[k] = old
					} else {
						delete(fx.env, k)
					}
				}()
			}
			vr, err := fx.verify()
			mustCode(t, vr.Code, c.code, err, fx.log.String())
			if vr.Reason != c.reason || !strings.Contains(vr.Detail, c.detail) {
				t.Fatalf("reason %q detail %q, want %q containing %q", vr.Reason, vr.Detail, c.reason, c.detail)
			}
		})
	}
}
