package action

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/kernel/replay"
)

// reviewIdentity is the identity GitHub gives the jobs of workflow
// proofgate.yml on PR prNum: job_workflow_ref, ref and sha of the merge ref.
func reviewIdentity(fx *fixture, event string) githubtest.Claims {
	ref := fmt.Sprintf("refs/pull/%d/merge", prNum)
	wf := owner + "/" + repo + "/.github/workflows/proofgate.yml@" + ref
	return githubtest.Claims{Repository: owner + "/" + repo, Ref: ref, SHA: fx.merge, EventName: event, WorkflowRef: wf, JobWorkflowRef: wf}
}

// keylessFast runs the pull_request job keyless under the identity
// prClaims makes of the default one, with rootOf's trusted root on the
// base branch, then points the job at a fresh checkout for the review
// event, with the review job's own (default) identity.
func keylessFast(t *testing.T, svc, rootOf *sigstoretest.Services, prClaims func(*githubtest.Claims)) *fastFixture {
	t.Helper()
	counter := filepath.Join(t.TempDir(), "counter")
	c := strings.ReplaceAll(slowContract, "COUNTER", counter)
	fx := newFixtureBase(t, c, map[string]string{trustedRootRel: string(rootOf.TrustedRoot)}, nil)
	ff := &fastFixture{fixture: fx, counter: counter}
	fx.gh.SetRun(owner, repo, strings.Repeat("0", 40))
	delete(fx.env, "INPUT_SIGNING-KEY")
	fx.env["INPUT_SIGNING"] = SigningKeyless
	fx.env["INPUT_FULCIO-URL"], fx.env["INPUT_TSA-URL"], fx.env["INPUT_REKOR-URL"] = svc.FulcioURL, svc.TSAURL, ""
	fx.env["INPUT_TRUSTED-ROOT"] = trustedRootRel
	pc := reviewIdentity(fx, "pull_request")
	if prClaims != nil {
		prClaims(&pc)
	}
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = svc.OIDC.RequestEndpoint(pc)
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	var ok bool
	if ff.zip, ok = fx.gh.Uploaded(RunArtifactPrefix + fx.head); !ok {
		t.Fatalf("no keyless hand-off uploaded:\n%s", fx.log.String())
	}
	ff.review = fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	ff.freshJob()
	fx.reviewEvent(ff.review)
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = svc.OIDC.RequestEndpoint(reviewIdentity(fx, "pull_request_review"))
	ff.list(githubtest.Artifact{Data: ff.zip})
	return ff
}

func TestKeylessHandoffImportsWithoutRerunning(t *testing.T) {
	svc := sigstoretest.Start(t)
	ff := keylessFast(t, svc, svc, nil)
	files, err := artifact.Unzip(ff.zip, 1<<30, 1<<30)
	if err != nil || len(files) != 1 {
		t.Fatalf("hand-off zip: %d files, %v", len(files), err)
	}
	for _, b := range files {
		m, err := artifact.AttestationMembers(b)
		if err != nil || len(m[envelope.MaterialFile]) == 0 {
			t.Fatalf("the keyless hand-off carries no %s (%v)", envelope.MaterialFile, err)
		}
	}
	res, err := ff.run()
	mustCode(t, res.Code, ExitOK, err, ff.log.String())
	if !res.Imported || res.FastPathRefusal != "" || res.State != replay.Complete || res.Recorded != 1 || res.ArtifactID == 0 {
		t.Fatalf("review job: %+v\n%s", res, ff.log.String())
	}
	if ff.runs() != 1 {
		t.Fatalf("the review job re-ran the checks (%d runs)", ff.runs())
	}
	if !strings.HasSuffix(res.Signer, "/.github/workflows/proofgate.yml@refs/pull/7/merge") {
		t.Fatalf("the bundle's signer %q", res.Signer)
	}
}

// A keyless hand-off is imported only when its certificate names the
// review job's own workflow, ref, commit and repository, issued by a CA of
// the base branch's trusted root; anything else is refused with its reason
// and the checks re-run.
func TestKeylessHandoffHostile(t *testing.T) {
	svc := sigstoretest.Start(t)
	other := sigstoretest.Start(t)
	cases := []struct {
		name   string
		rootOf *sigstoretest.Services
		claims func(*githubtest.Claims)
		env    map[string]string
		want   handoff.Reason
		detail string
	}{
		{"another workflow file", svc, func(c *githubtest.Claims) {
			c.JobWorkflowRef = strings.Replace(c.JobWorkflowRef, "proofgate.yml", "other.yml", 1)
			c.WorkflowRef = c.JobWorkflowRef
		}, nil, handoff.SignerID, "signer workflow"},
		{"another ref", svc, func(c *githubtest.Claims) {
			c.Ref = "refs/heads/topic"
			c.JobWorkflowRef = strings.Replace(c.JobWorkflowRef, "refs/pull/7/merge", c.Ref, 1)
			c.WorkflowRef = c.JobWorkflowRef
		}, nil, handoff.SignerID, "refs/heads/topic"},
		{"another repository", svc, func(c *githubtest.Claims) { c.Repository = owner + "/fork" }, nil, handoff.SignerID, "source repository"},
		{"another commit", svc, func(c *githubtest.Claims) { c.SHA = strings.Repeat("e", 40) }, nil, handoff.SignerID, "source digest"},
		{"untrusted root", other, nil, nil, handoff.Untrusted, "certificate"},
		{"no trusted root input", svc, nil, map[string]string{"INPUT_TRUSTED-ROOT": ""}, handoff.NoTrustedRoot, "trusted-root"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ff := keylessFast(t, svc, tc.rootOf, tc.claims)
			for k, v := range tc.env {
				ff.env[k] = v
			}
			res, err := ff.run()
			mustCode(t, res.Code, ExitOK, err, ff.log.String())
			if res.Imported || res.FastPathRefusal != string(tc.want) || !strings.Contains(ff.log.String(), tc.detail) {
				t.Fatalf("refusal %q imported %v, want %q with %q\n%s", res.FastPathRefusal, res.Imported, tc.want, tc.detail, ff.log.String())
			}
			if ff.runs() != 2 || res.State != replay.Complete {
				t.Fatalf("the review job did not re-run the checks to COMPLETE: %d runs, %s", ff.runs(), res.State)
			}
		})
	}
}
