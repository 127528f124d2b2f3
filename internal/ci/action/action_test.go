package action

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

func mustCode(t *testing.T, got, want int, err error, log string) {
	t.Helper()
	if got != want {
		t.Fatalf("exit code %d, want %d (err %v)\nlog:\n%s", got, want, err, log)
	}
}

// The whole path without Docker: no review → AWAITING_APPROVAL; an approval
// of the head → COMPLETE, bundle uploaded; verify accepts it for the
// release merge commit by tree; a tampered artifact is refused.
func TestPendingApproveVerifyTamper(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.prEvent()

	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if res.State != replay.AwaitingApproval || res.Recorded != 0 || res.BundlePath != "" {
		t.Fatalf("pending run: %+v", res)
	}
	out := fx.outputs()
	if out["state"] != "AWAITING_APPROVAL" || out["run-id"] != res.RunID || !strings.HasPrefix(out["verification-digest"], "sha256:") {
		t.Fatalf("outputs: %v", out)
	}
	if _, ok := out["bundle-path"]; ok {
		t.Fatalf("bundle-path set for a pending run: %v", out)
	}
	sum := fx.summary()
	for _, want := range []string{"AWAITING_APPROVAL", "Requires 1 approving review", "write, maintain, admin", "no reviews yet", "`readme`", "passed", fx.merge} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	if !strings.Contains(fx.log.String(), "::error title=ProofGate awaiting approval::") {
		t.Errorf("no pending annotation:\n%s", fx.log.String())
	}
	if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); ok {
		t.Fatal("a pending run uploaded an artifact")
	}

	// The maintainer approves the head; the pull_request_review run completes.
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != replay.Complete || res.Recorded != 1 || res.ArtifactID == 0 {
		t.Fatalf("approved run: %+v", res)
	}
	out = fx.outputs()
	if out["state"] != "COMPLETE" || out["bundle-path"] != ".proofgate/runs/"+res.RunID+".bundle.tar.gz" || out["artifact-id"] == "" {
		t.Fatalf("outputs: %v", out)
	}
	if _, err := os.Stat(filepath.Join(fx.ws, out["bundle-path"])); err != nil {
		t.Fatal(err)
	}
	zipData, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head)
	if !ok {
		t.Fatal("no artifact uploaded")
	}
	checkArtifactFiles(t, fx, zipData, res)
	sum = fx.summary()
	for _, want := range []string{"COMPLETE", "| bob | APPROVED |", "yes (write)", "review " + strconv.FormatInt(id, 10), res.BundleSHA256, "artifact"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	// The recorded decision carries the review's identity and the head's tree.
	rep, err := run.Audit(filepath.Join(fx.ws, ".proofgate", "runs", res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Decisions) != 1 || rep.Decisions[0].GitHub == nil {
		t.Fatalf("decisions: %+v", rep.Decisions)
	}
	g := rep.Decisions[0].GitHub
	headTree := git(t, fx.ws, "rev-parse", fx.head+"^{tree}")
	if g.Login != "bob" || g.UserID != bob.ID || g.ReviewID != id || g.Commit != fx.head || g.Tree != headTree || g.PullRequest != prNum || g.Permission != "write" {
		t.Fatalf("github review: %+v", g)
	}
	if rep.Source.Commit != fx.merge {
		t.Fatalf("source commit %s, want the tested merge %s", rep.Source.Commit, fx.merge)
	}

	// Release gate on the real merge commit, match: tree.
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	vo := fx.outputs()
	if vo["verdict"] != "accepted" || vo["run-id"] != res.RunID || vo["reason"] != "" {
		t.Fatalf("verify outputs %v", vo)
	}
	if !strings.Contains(fx.summary(), "ProofGate verify: accepted") {
		t.Fatalf("verify summary:\n%s", fx.summary())
	}

	// match: commit refuses: no run tested the release commit itself.
	fx.env["INPUT_MATCH"] = "commit"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(gate.ReasonNotFound) {
		t.Fatalf("match commit: %+v", vr)
	}
	delete(fx.env, "INPUT_MATCH")

	// A tampered artifact is refused: a corrupt zip, and a well-formed zip
	// around a bundle whose run.json was edited.
	bad := bytes.Clone(zipData)
	bad[len(bad)/2] ^= 0xff
	fx.gh.TamperBlob(ArtifactPrefix+fx.head, bad)
	vr, err = fx.verify()
	if vr.Code != ExitRefused || vr.Verdict != bundle.VerdictRefused || err == nil {
		t.Fatalf("tampered artifact: %+v %v", vr, err)
	}
	if fx.outputs()["verdict"] != "refused" {
		t.Fatalf("outputs %v", fx.outputs())
	}
	fx.gh.TamperBlob(ArtifactPrefix+fx.head, forge(t, zipData, "run.json", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"bob"`), []byte(`"eve"`), 1)
	}))
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != "subject-mismatch" || fx.outputs()["reason"] != "subject-mismatch" {
		t.Fatalf("forged run.json: %+v", vr)
	}
}

func TestNeutralPending(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.prEvent()
	fx.env["INPUT_ON-PENDING"] = "neutral"
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != replay.AwaitingApproval {
		t.Fatalf("state %s", res.State)
	}
	if !strings.Contains(fx.log.String(), "::notice title=ProofGate awaiting approval::") {
		t.Fatalf("no notice:\n%s", fx.log.String())
	}
}

// Reviews that must not count: an older commit, the author, a read-only
// user, a bot; approval then changes requested by the same reviewer.
func TestReviewsThatDoNotCount(t *testing.T) {
	cases := []struct {
		name    string
		reviews func(fx *fixture) []githubtest.Review
		why     string
	}{
		{"older commit", func(fx *fixture) []githubtest.Review {
			return []githubtest.Review{{User: bob, State: "APPROVED", CommitID: fx.base}}
		}, "not the verified head"},
		{"self approval", func(fx *fixture) []githubtest.Review {
			return []githubtest.Review{{User: alice, State: "APPROVED", CommitID: fx.head}}
		}, "PR author"},
		{"read-only", func(fx *fixture) []githubtest.Review {
			return []githubtest.Review{{User: carol, State: "APPROVED", CommitID: fx.head}}
		}, "read"},
		{"bot", func(fx *fixture) []githubtest.Review {
			return []githubtest.Review{{User: githubtest.User{Login: "ci[bot]", ID: 999, Type: "Bot"}, State: "APPROVED", CommitID: fx.head}}
		}, "bots never count"},
		{"changes after approval", func(fx *fixture) []githubtest.Review {
			return []githubtest.Review{{User: bob, State: "APPROVED", CommitID: fx.head}, {User: bob, State: "CHANGES_REQUESTED", CommitID: fx.head}}
		}, "CHANGES_REQUESTED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, processContract, nil)
			fx.gh.SetPermission(owner, repo, "ci[bot]", githubtest.Permission{Permission: "admin"})
			var last int64
			for _, r := range tc.reviews(fx) {
				last = fx.gh.AddReview(owner, repo, prNum, r)
			}
			fx.reviewEvent(last)
			res, err := fx.run()
			mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
			if res.State != replay.AwaitingApproval || res.Recorded != 0 || res.ArtifactID != 0 {
				t.Fatalf("%+v", res)
			}
			if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); ok {
				t.Fatal("artifact uploaded")
			}
			if s := fx.summary(); !strings.Contains(s, tc.why) || !strings.Contains(s, "**Pending:**") {
				t.Fatalf("summary lacks %q:\n%s", tc.why, s)
			}
		})
	}
}

func TestTwoRequiredOnePresent(t *testing.T) {
	c := strings.Replace(processContract, "required: 1", "required: 2", 1)
	fx := newFixture(t, c, nil)
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if res.Recorded != 0 || res.State != replay.AwaitingApproval || !strings.Contains(fx.summary(), "Requires 2") {
		t.Fatalf("%+v\n%s", res, fx.summary())
	}
}

// A PR that edits the contract to drop a check, and adds what the check
// forbids, still runs the base contract's check and is blocked.
func TestPRDropsCheckBaseContractRuns(t *testing.T) {
	weakened := strings.Replace(processContract, `  - id: guard
    run: [test, "!", -e, FORBIDDEN]
`, "", 1)
	fx := newFixture(t, processContract, map[string]string{".proofgate/contract.yaml": weakened, "FORBIDDEN": "x\n"})
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err := fx.run()
	mustCode(t, res.Code, ExitRefused, err, fx.log.String())
	if res.State != replay.Blocked || !res.ContractChanged || res.ContractOrigin != "git:"+fx.base+":.proofgate/contract.yaml" || res.Recorded != 0 {
		t.Fatalf("%+v", res)
	}
	log := fx.log.String()
	if !strings.Contains(log, "::error title=ProofGate check guard failed::") || !strings.Contains(log, "::group::check guard: failed") {
		t.Fatalf("log:\n%s", log)
	}
	if s := fx.summary(); !strings.Contains(s, "This pull request changes `.proofgate/contract.yaml`") {
		t.Fatalf("summary:\n%s", s)
	}
}

// A fork PR has no signing key: checks run, the approval counts, but no
// bundle is exported, and the job says so.
func TestForkPR(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.gh.AddPR(owner, repo, githubtest.PR{Number: prNum, Author: alice, HeadSHA: fx.head, BaseSHA: fx.base, HeadRepo: "mallory/widget"})
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	delete(fx.env, "INPUT_SIGNING-KEY")
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if !res.Fork || res.BundlePath != "" || res.ArtifactID != 0 {
		t.Fatalf("%+v", res)
	}
	if s := fx.summary(); !strings.Contains(s, "comes from a fork") || !strings.Contains(s, "no bundle was exported") {
		t.Fatalf("summary:\n%s", s)
	}
	if !strings.Contains(fx.log.String(), "title=ProofGate fork pull request") {
		t.Fatalf("log:\n%s", fx.log.String())
	}
}

// A same-repository PR without a key fails clearly once the run could be
// exported.
func TestMissingKeyNonFork(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	delete(fx.env, "INPUT_SIGNING-KEY")
	res, err := fx.run()
	mustCode(t, res.Code, ExitUsage, err, fx.log.String())
	if err == nil || !strings.Contains(err.Error(), "signing-key is empty") {
		t.Fatalf("err %v", err)
	}
}

func TestBadKeyIsUsageErrorAndMasked(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.prEvent()
	fx.env["INPUT_SIGNING-KEY"] = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LW5vdC1hLWtleQ==\n-----END PRIVATE KEY-----\n"
	res, err := fx.run()
	mustCode(t, res.Code, ExitUsage, err, fx.log.String())
	log := fx.log.String()
	if !strings.HasPrefix(log, "::add-mask::") || !strings.Contains(log, "::add-mask::c2VjcmV0LW5vdC1hLWtleQ==\n") {
		t.Fatalf("key not masked first:\n%s", log)
	}
	if !strings.Contains(log, "::add-mask::ghs_testtoken") {
		t.Fatalf("token not masked:\n%s", log)
	}
	if res.RunID != "" {
		t.Fatal("planned a run with an unusable key")
	}
}

// API errors never give COMPLETE; 429 with Retry-After is retried.
func TestAPIErrors(t *testing.T) {
	t.Run("5xx forever", func(t *testing.T) {
		t.Parallel()
		fx := newFixture(t, processContract, nil)
		id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
		fx.reviewEvent(id)
		fx.gh.Fail("/reviews", 502, "", -1)
		res, err := fx.run()
		mustCode(t, res.Code, ExitEnv, err, fx.log.String())
		if res.State != replay.AwaitingApproval || res.Recorded != 0 || res.ArtifactID != 0 || fx.outputs()["state"] != "AWAITING_APPROVAL" {
			t.Fatalf("%+v %v", res, fx.outputs())
		}
	})
	t.Run("429 then ok", func(t *testing.T) {
		t.Parallel()
		fx := newFixture(t, processContract, nil)
		id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
		fx.reviewEvent(id)
		fx.gh.Fail("/reviews", 429, "1", 1)
		start := time.Now()
		res, err := fx.run()
		mustCode(t, res.Code, ExitOK, err, fx.log.String())
		if res.State != replay.Complete || fx.gh.Count("GET", "/reviews") < 2 || time.Since(start) < time.Second {
			t.Fatalf("%+v reviews requests %d", res, fx.gh.Count("GET", "/reviews"))
		}
	})
	t.Run("bad token", func(t *testing.T) {
		t.Parallel()
		fx := newFixture(t, processContract, nil)
		fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
		fx.env["INPUT_GITHUB-TOKEN"] = "wrong"
		res, err := fx.run()
		mustCode(t, res.Code, ExitEnv, err, fx.log.String())
		if res.State != replay.AwaitingApproval {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("artifact service down", func(t *testing.T) {
		t.Parallel()
		fx := newFixture(t, processContract, nil)
		fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
		fx.gh.Fail("/twirp/", 500, "", -1)
		res, err := fx.run()
		mustCode(t, res.Code, ExitEnv, err, fx.log.String())
		if res.State != replay.Complete || res.ArtifactID != 0 || fx.outputs()["artifact-id"] != "" {
			t.Fatalf("%+v", res)
		}
	})
}

// The head moves between the event and the review read: nothing is recorded.
func TestHeadMoved(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	fx.gh.MoveHeadAfter(owner, repo, prNum, 1, strings.Repeat("e", 40))
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if res.Recorded != 0 || res.State != replay.AwaitingApproval || !strings.Contains(fx.summary(), "head moved") {
		t.Fatalf("%+v\n%s", res, fx.summary())
	}
}

// Check output cannot issue workflow commands.
func TestCheckOutputCannotIssueCommands(t *testing.T) {
	c := strings.Replace(processContract, "    run: [test, -f, README.md]", "    run: [cat, README.md]", 1)
	fx := newFixture(t, c, map[string]string{"README.md": "::add-mask::bob\n::endgroup::\n::error::forged\n"})
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	log := fx.log.String()
	i := strings.Index(log, "::add-mask::bob")
	stop := strings.LastIndex(log[:i], "::stop-commands::proofgate-")
	if i < 0 || stop < 0 {
		t.Fatalf("output not fenced:\n%s", log)
	}
	tok := strings.TrimSpace(log[stop+len("::stop-commands::") : stop+len("::stop-commands::")+len("proofgate-")+32])
	if end := strings.Index(log[i:], "::"+tok+"::"); end < 0 {
		t.Fatalf("commands not resumed after the output:\n%s", log)
	}
	if strings.Contains(log[:stop], "forged") {
		t.Fatal("output printed outside the fence")
	}
}

func TestBadInputs(t *testing.T) {
	for k, v := range map[string]string{"INPUT_ON-PENDING": "maybe", "INPUT_JOBS": "0", "INPUT_ARTIFACT-NAME": "a/b", "INPUT_CONTRACT": "../x.yaml"} {
		t.Run(k, func(t *testing.T) {
			fx := newFixture(t, processContract, nil)
			fx.prEvent()
			fx.env[k] = v
			res, err := fx.run()
			mustCode(t, res.Code, ExitUsage, err, fx.log.String())
			if !strings.Contains(fx.summary(), "Error:") {
				t.Fatalf("summary:\n%s", fx.summary())
			}
		})
	}
}

// Without GITHUB_OUTPUT and GITHUB_STEP_SUMMARY (a local run) nothing panics
// and the outputs go to the log.
func TestNoRunnerFiles(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.prEvent()
	delete(fx.env, "GITHUB_OUTPUT")
	delete(fx.env, "GITHUB_STEP_SUMMARY")
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if !strings.Contains(fx.log.String(), "output state=AWAITING_APPROVAL") || res.Outputs["run-id"] != res.RunID {
		t.Fatalf("log:\n%s", fx.log.String())
	}
}

// A push run (no PR) cannot be approved by reviews.
func TestPushEventPending(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	p := filepath.Join(fx.tmp, "push.json")
	writeFile(t, p, `{"ref":"refs/heads/main","after":"`+fx.merge+`","repository":{"full_name":"acme/widget"}}`)
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_EVENT_PATH"] = "push", p
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	if res.ContractOrigin != "file:.proofgate/contract.yaml" || !strings.Contains(fx.summary(), "no single pull request was merged") {
		t.Fatalf("%+v\n%s", res, fx.summary())
	}
}

func TestVerifyRefusals(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["GITHUB_EVENT_NAME"] = "push"
	m := fx.release()
	fx.env["GITHUB_SHA"] = m

	t.Run("missing", func(t *testing.T) {
		vr, err := fx.verify()
		mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
		if vr.Reason != string(gate.ReasonNotFound) || fx.outputs()["verdict"] != "refused" {
			t.Fatalf("%+v", vr)
		}
	})
	t.Run("expired", func(t *testing.T) {
		fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: ArtifactPrefix + m, HeadSHA: m, Expired: true, Data: []byte("x")})
		fx.env["INPUT_MATCH"] = "commit"
		defer delete(fx.env, "INPUT_MATCH")
		vr, err := fx.verify()
		mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
		if vr.Reason != string(gate.ReasonExpired) {
			t.Fatalf("%+v", vr)
		}
	})
	t.Run("other commit", func(t *testing.T) {
		fx.env["INPUT_MATCH"] = "commit"
		fx.env["INPUT_ARTIFACT-NAME"] = "evidence"
		defer delete(fx.env, "INPUT_MATCH")
		defer delete(fx.env, "INPUT_ARTIFACT-NAME")
		fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: "evidence", HeadSHA: fx.base, Data: []byte("x")})
		vr, err := fx.verify()
		mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
		if vr.Reason != string(gate.ReasonOther) {
			t.Fatalf("%+v", vr)
		}
	})
	t.Run("not a zip", func(t *testing.T) {
		fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: ArtifactPrefix + fx.head, HeadSHA: fx.head, Data: []byte("not a zip")})
		vr, err := fx.verify()
		mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
		if vr.Reason != string(gate.ReasonBadZip) {
			t.Fatalf("%+v", vr)
		}
	})
	t.Run("bad inputs", func(t *testing.T) {
		for k, v := range map[string]string{"INPUT_MATCH": "branch", "INPUT_COMMIT": "main", "INPUT_REQUIRE-APPROVALS": "-1", "INPUT_TRUST-STORE": "/nonexistent/trust.json"} {
			old, had := fx.env[k]
			fx.env[k] = v
			vr, err := fx.verify()
			if had {
				fx.env[k] = old
			} else {
				delete(fx.env, k)
			}
			var ae *exit.Error
			if vr.Code != ExitUsage || !errors.As(err, &ae) || vr.Verdict != bundle.VerdictRefused {
				t.Fatalf("%s=%s: %+v %v", k, v, vr, err)
			}
		}
	})
	t.Run("api down", func(t *testing.T) {
		fx.gh.Fail("/actions/artifacts", 503, "", -1)
		vr, err := fx.verify()
		mustCode(t, vr.Code, ExitEnv, err, fx.log.String())
		if vr.Verdict != bundle.VerdictRefused || vr.Reason != string(gate.ReasonGitHubAPI) {
			t.Fatalf("%+v", vr)
		}
	})
}

// A local bundle file (input bundle) verifies without the API; a bundle for
// another tree is refused.
func TestVerifyLocalBundle(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	m := fx.release()
	fx.env["GITHUB_SHA"] = m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_BUNDLE"] = res.BundlePath
	delete(fx.env, "INPUT_GITHUB-TOKEN")
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vr.RunID != res.RunID || vr.Accepted == nil || vr.Accepted.Approvals != 1 {
		t.Fatalf("%+v", vr)
	}
	fx.env["INPUT_REQUIRE-APPROVALS"] = "2"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != "insufficient-approvals" {
		t.Fatalf("%+v", vr)
	}
	delete(fx.env, "INPUT_REQUIRE-APPROVALS")
	fx.env["INPUT_COMMIT"] = fx.base // base tree differs from the tested tree
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != "tree-mismatch" {
		t.Fatalf("%+v", vr)
	}
}

// checkArtifactFiles checks that the artifact holds the archive and its
// companion Sigstore bundle, both as written to the workspace, and that
// the companion is the key Sigstore bundle of the archive's envelope.
func checkArtifactFiles(t *testing.T, fx *fixture, zipData []byte, res *Result) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	archiveName, compName := res.RunID+".bundle.tar.gz", res.RunID+".bundle.sigstore.json"
	if !slices.Equal(names, []string{compName, archiveName}) {
		t.Fatalf("artifact files %v, want %s and %s", names, archiveName, compName)
	}
	if res.SigstorePath != ".proofgate/runs/"+compName || fx.outputs()["sigstore-path"] != res.SigstorePath {
		t.Fatalf("sigstore path %q, outputs %v", res.SigstorePath, fx.outputs())
	}
	files, err := artifact.Unzip(zipData, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for name, rel := range map[string]string{archiveName: res.BundlePath, compName: res.SigstorePath} {
		disk, err := os.ReadFile(filepath.Join(fx.ws, rel))
		if err != nil || !bytes.Equal(disk, files[name]) {
			t.Fatalf("%s: uploaded bytes differ from %s (%v)", name, rel, err)
		}
	}
	sb, err := sigstore.Read(files[compName])
	if err != nil {
		t.Fatal(err)
	}
	members, err := artifact.AttestationMembers(files[archiveName])
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.SameEnvelope(members[bundle.AttestationFile]); err != nil {
		t.Fatalf("companion: %v", err)
	}
	if _, ok := members["attestation.sigstore.json"]; ok {
		t.Fatal("a key-signed archive carries attestation.sigstore.json")
	}
	if res.Signer != "" || fx.outputs()["signer"] != "" {
		t.Fatalf("key mode set signer %q", res.Signer)
	}
}
