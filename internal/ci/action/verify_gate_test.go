package action

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/contract"
)

// weakContract runs the same check as processContract and requires no
// approval.
const weakContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 30s
checks:
  - id: readme
    run: [sh, -c, 'test -f README.md && echo ok']
approval: {required: 0}
`

// The main action's contract input comes from the workflow file, which a
// pull request can edit: a PR points it at another contract file of the
// base branch (one that requires nothing), its run completes unreviewed,
// and the artifact is genuine and signed. The gate binds the contract at
// the release commit, so it refuses that run unless the release workflow
// (which the PR cannot change) names that file itself.
func TestVerifyBindsTheReleaseCommitsContract(t *testing.T) {
	fx := newFixtureBase(t, processContract, map[string]string{".proofgate/weak.yaml": weakContract}, nil)
	fx.env["INPUT_CONTRACT"] = ".proofgate/weak.yaml"
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != "COMPLETE" {
		t.Fatalf("weak run: %+v", res)
	}
	m := fx.release()
	delete(fx.env, "INPUT_CONTRACT")
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_REQUIRE-APPROVALS"] = "0"

	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(bundle.ContractMismatch) || vr.Outputs["reason"] != string(bundle.ContractMismatch) {
		t.Fatalf("run under weak.yaml, default gate: %+v", vr)
	}
	if !strings.Contains(fx.summary(), vr.Contract) || vr.Contract == "" {
		t.Errorf("the summary does not show the required contract %q:\n%s", vr.Contract, fx.summary())
	}
	fx.env["INPUT_CONTRACT"] = ".proofgate/weak.yaml"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())

	// A path the release commit does not have binds nothing: refused.
	fx.env["INPUT_CONTRACT"] = ".proofgate/none.yaml"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(gate.ReasonNoContract) {
		t.Fatalf("missing contract file: %+v", vr)
	}
	fx.env["INPUT_CONTRACT"] = "../outside.yaml"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitUsage, err, fx.log.String())
}

// A pull request that weakens the contract runs under the base contract;
// once merged, the release commit carries the weakened contract, so that
// run no longer matches: the release needs a run under the new contract.
func TestVerifyAfterContractEditNeedsNewRun(t *testing.T) {
	fx := newFixture(t, processContract, map[string]string{".proofgate/contract.yaml": weakContract})
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(bundle.ContractMismatch) {
		t.Fatalf("base-contract run, release carries the edited contract: %+v", vr)
	}
}

// A leaked key that was retired (or revoked) signs a bundle and backdates
// signed_at to before the retirement. GitHub's created_at of the artifact,
// which the signer cannot choose, shows it appeared after: refused.
func TestVerifyArtifactTimeWitnessesKeyStatus(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_MATCH"] = "tree"

	b := foreignBundle(t, fx, owner+"/"+repo)
	st, err := trust.Load(fx.trust)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := bundle.Verify(bytes.NewReader(b), st, bundle.VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 1})
	if err != nil {
		t.Fatal(err)
	}
	signedAt := ok.SignedAt
	z, err := artifact.Zip(map[string][]byte{"x.bundle.tar.gz": b})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		change  func(*trust.Store, string, time.Time) error
		created time.Duration // after signed_at
		want    string
	}{
		{"retired, uploaded before retirement", retire, 30 * time.Second, ""},
		{"retired, uploaded after retirement", retire, time.Hour, string(bundle.KeyNotValid)},
		{"revoked, uploaded before revocation", revoke, 30 * time.Second, ""},
		{"revoked, uploaded after revocation", revoke, time.Hour, string(bundle.KeyRevoked)},
		{"active, signed_at after the upload", nil, -time.Hour, string(bundle.SigningTimeImplausible)},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := trust.New()
			orig, _ := trust.Load(fx.trust)
			st.Keys = orig.Keys
			if c.change != nil {
				if err := c.change(st, st.Keys[0].ID, signedAt.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			p := t.TempDir() + "/trust.json"
			if err := st.Save(p); err != nil {
				t.Fatal(err)
			}
			fx.env["INPUT_TRUST-STORE"] = p
			name := "evidence-" + strings.ReplaceAll(c.name, " ", "-")
			name = strings.ReplaceAll(name, ",", "")
			fx.env["INPUT_ARTIFACT-NAME"] = name
			fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: name, HeadSHA: fx.head, Data: z, CreatedAt: signedAt.Add(c.created)})
			vr, err := fx.verify()
			if c.want == "" {
				mustCode(t, vr.Code, ExitOK, err, fx.log.String())
				return
			}
			mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
			if vr.Reason != c.want {
				t.Fatalf("%+v, want %s", vr, c.want)
			}
		})
	}
}

func retire(s *trust.Store, id string, at time.Time) error { return s.Retire(id, at) }

func revoke(s *trust.Store, id string, at time.Time) error { return s.Revoke(id, &at) }

// After a pull request that edits the contract merges, the push run of the
// merge commit (under the new contract, read from the checkout) takes its
// approvals from that merged pull request's reviews, and the gate accepts
// it for the merge commit. A review by the author, or of another commit,
// still does not count, and a pull request merged into another commit
// lends nothing.
func TestPushRunOfMergeCommitTakesTheMergedPRsApprovals(t *testing.T) {
	edited := strings.Replace(processContract, "timeout: 30s", "timeout: 20s", 1)
	fx := newFixture(t, processContract, map[string]string{".proofgate/contract.yaml": edited})
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: alice, State: "APPROVED", CommitID: fx.head})
	push := func() (*Result, error) {
		p := filepath.Join(fx.tmp, "push.json")
		writeFile(t, p, `{"ref":"refs/heads/main","after":"`+fx.merge+`","repository":{"full_name":"acme/widget"}}`)
		fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_EVENT_PATH"], fx.env["GITHUB_SHA"] = "push", p, fx.merge
		fx.gh.SetRun(owner, repo, fx.merge)
		return fx.run()
	}
	// Not merged yet: a direct push, nothing to take approvals from.
	res, err := push()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())

	// Merged into another commit: still nothing.
	fx.gh.MergePR(owner, repo, prNum, fx.base)
	res, err = push()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())

	// Merged into this commit, but only the author approved.
	fx.gh.MergePR(owner, repo, prNum, fx.merge)
	res, err = push()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if !strings.Contains(fx.summary(), "pull request #7") {
		t.Errorf("the summary does not name the merged pull request:\n%s", fx.summary())
	}

	// bob approves an older commit, then the head: the head's approval counts.
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.base})
	res, err = push()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	res, err = push()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != "COMPLETE" || res.Recorded != 1 || res.ArtifactID == 0 {
		t.Fatalf("%+v", res)
	}

	// The gate accepts it for the merge commit under the merged contract.
	delete(fx.env, "GITHUB_EVENT_PATH")
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_MATCH"] = "commit"
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vr.Accepted == nil || vr.Accepted.Run.Source.Commit != fx.merge || vr.Accepted.Approvals != 1 {
		t.Fatalf("%+v", vr)
	}
	c, err := contract.Parse("c.yaml", []byte(edited), "")
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := c.Hash(); vr.Accepted.Run.ContractHash != h || vr.Contract != h {
		t.Fatalf("accepted under %s, the merged contract is %s", vr.Accepted.Run.ContractHash, h)
	}
}
