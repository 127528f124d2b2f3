package action

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/kernel/replay"
)

// The agent-session pin lives in the base contract
// (approval.agent_sessions.workflow), never in the pull request's
// workflow: these tests try to move it from the pull request's side.

// pinnedAgentContract is agentContract with the agent workflow pinned.
var pinnedAgentContract = pinAgent(agentContract, ".github/workflows/agent.yml")

// pinAgent adds approval.agent_sessions.workflow: wf to contract c.
func pinAgent(c, wf string) string {
	out := strings.Replace(c, "approval:\n", "approval:\n  agent_sessions: {workflow: "+wf+"}\n", 1)
	if out == c {
		panic("contract has no approval section")
	}
	return out
}

// keylessAgentRun uploads evidence signed as claims and runs the job.
func keylessAgentRun(t *testing.T, svc *sigstoretest.Services, fx *fixture, claims githubtest.Claims) (*Result, error) {
	t.Helper()
	sign, id := keylessSign(t, svc, claims)
	fx.uploadEvidence(agentEvidence(t, fx, evidenceOpts{sign: sign, keyID: id}), 0)
	return fx.run()
}

func wantUnproven(t *testing.T, fx *fixture, res *Result, err error, reason bundle.AgentSessionReason) {
	t.Helper()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	a := res.Decision.AgentSession
	if res.State != replay.AwaitingApproval || res.Recorded != 0 || a == nil || a.Proven || a.Reason != string(reason) {
		t.Fatalf("%+v agent session %+v, want reason %s\n%s", res, a, reason, fx.log.String())
	}
}

// TestAgentPinInputIgnored: the pull request's workflow passes the
// removed input agent-workflow naming another base-branch workflow (one
// anybody can dispatch, say) and signs the evidence there. The action has
// no such input: the contract's pin decides and the signer is refused.
func TestAgentPinInputIgnored(t *testing.T) {
	svc := sigstoretest.Start(t)
	fx := keylessAgentFixture(t, svc)
	fx.env["INPUT_AGENT-WORKFLOW"] = ".github/workflows/release.yml"
	res, err := keylessAgentRun(t, svc, fx, workflowClaims(".github/workflows/release.yml", "refs/heads/main"))
	wantUnproven(t, fx, res, err, review.AgentSignerID)
	if d := res.Decision.AgentSession.Detail; !strings.Contains(d, "agent.yml") {
		t.Fatalf("the refusal does not name the pinned workflow: %s", d)
	}
}

// TestAgentPinPullRequestEditsPin: the pull request moves the pin in its
// own copy of the contract. The base contract governs: evidence signed by
// the PR's choice is refused, evidence signed by the base's pin proves.
func TestAgentPinPullRequestEditsPin(t *testing.T) {
	svc := sigstoretest.Start(t)
	evil := map[string]string{".proofgate/contract.yaml": pinAgent(agentContract, ".github/workflows/release.yml")}
	t.Run("signed by the pull request's pin", func(t *testing.T) {
		fx := keylessAgentFixtureWith(t, svc, pinnedAgentContract, evil)
		res, err := keylessAgentRun(t, svc, fx, workflowClaims(".github/workflows/release.yml", "refs/heads/main"))
		wantUnproven(t, fx, res, err, review.AgentSignerID)
		if !res.ContractChanged {
			t.Fatalf("the pull request's contract edit was not noticed: %+v", res)
		}
	})
	t.Run("signed by the base contract's pin", func(t *testing.T) {
		fx := keylessAgentFixtureWith(t, svc, pinnedAgentContract, evil)
		res, err := keylessAgentRun(t, svc, fx, agentClaims("refs/heads/main"))
		mustCode(t, res.Code, ExitOK, err, fx.log.String())
		if a := res.Decision.AgentSession; res.State != replay.Complete || a == nil || !a.Proven || !res.ContractChanged {
			t.Fatalf("%+v agent session %+v\n%s", res, a, fx.log.String())
		}
	})
	t.Run("the pull request adds a pin the base lacks", func(t *testing.T) {
		fx := keylessAgentFixtureWith(t, svc, agentContract, map[string]string{".proofgate/contract.yaml": pinnedAgentContract})
		res, err := keylessAgentRun(t, svc, fx, agentClaims("refs/heads/main"))
		wantUnproven(t, fx, res, err, review.AgentNoPin)
	})
}

// TestAgentPinMissingKeyless: rules read from_agent_session but the
// contract pins no workflow. Keyless evidence, even from the workflow
// the old default named, is never proven, and the reason names the
// missing contract field.
func TestAgentPinMissingKeyless(t *testing.T) {
	svc := sigstoretest.Start(t)
	fx := keylessAgentFixtureWith(t, svc, agentContract, nil)
	res, err := keylessAgentRun(t, svc, fx, agentClaims("refs/heads/main"))
	wantUnproven(t, fx, res, err, review.AgentNoPin)
	if d := res.Decision.AgentSession.Detail; !strings.Contains(d, "approval.agent_sessions.workflow") {
		t.Fatalf("the reason does not name the contract field: %s", d)
	}
	if s := strings.ReplaceAll(fx.summary(), `\`, ""); !strings.Contains(s, "from_agent_session is not proven ("+string(review.AgentNoPin)) {
		t.Fatalf("the summary does not say why:\n%s", s)
	}
}

// TestAgentPinReviewEvent: on pull_request_review the pin also comes from
// the base contract, not from the pull request's copy.
func TestAgentPinReviewEvent(t *testing.T) {
	svc := sigstoretest.Start(t)
	evil := map[string]string{".proofgate/contract.yaml": pinAgent(agentContract, ".github/workflows/release.yml")}
	fx := keylessAgentFixtureWith(t, svc, pinnedAgentContract, evil)
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: carol, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = svc.OIDC.RequestEndpoint(reviewIdentity(fx, "pull_request_review"))
	res, err := keylessAgentRun(t, svc, fx, workflowClaims(".github/workflows/release.yml", "refs/heads/main"))
	wantUnproven(t, fx, res, err, review.AgentSignerID)
}
