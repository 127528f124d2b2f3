package action

// The job's side of the from_agent_session fact (ADR 0021, docs/SPEC.md
// "Agent-session evidence"): review.FindAgentEvidence lists and verifies
// the evidence for the pull request's head and this repository, opened by
// the opener the job makes (agentOpener):
//
//   - key mode: signed by the job's own signing key (the repository's
//     secret; whoever can read it can forge the fact, as they can forge a
//     bundle);
//   - keyless: verified against the trusted root at input trusted-root,
//     read from the base commit, and pinned to the agent workflow the
//     run's contract names (approval.agent_sessions.workflow; on
//     pull_request and pull_request_review events the base branch's
//     contract, whose hash the run is bound to): SAN and Build Signer
//     https://HOST/OWNER/REPO/<that workflow>@refs/heads/<base>, source
//     repository OWNER/REPO, source ref refs/heads/<base>. A pull request
//     changes neither the base contract, nor the base branch's workflow
//     file, nor the ref Fulcio certifies, so it can neither move the pin
//     nor sign evidence under the pinned identity. No action input names
//     the workflow: the workflow file that sets a job's inputs is the pull
//     request's own. A contract without the pin proves no keyless
//     evidence (review.AgentNoPin).
//
// A pull request can always hide evidence; see docs/THREAT-MODEL.md
// "from_agent_session".

import (
	"context"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/contract"
)

// agentFetcher is the job's review.AgentSessionFetcher. pin is the run's
// contract's approval.agent_sessions (nil: unset).
type agentFetcher struct {
	j   *job
	pin *contract.AgentSessions
}

// AgentSession finds and verifies the evidence for head.
func (a agentFetcher) AgentSession(ctx context.Context, head string) review.AgentSession {
	open, err := a.j.agentOpener(ctx, a.pin)
	if err != nil {
		return review.AgentRefusal(err, review.AgentSessionArtifactPrefix+head)
	}
	return review.FindAgentEvidence(ctx, a.j.gh, a.j.owner, a.j.name, head, open)
}

// agentOpener returns the opener that pins the evidence's signer.
func (j *job) agentOpener(ctx context.Context, pin *contract.AgentSessions) (bundle.AgentSessionOpener, error) {
	if !j.keyless {
		ks, ok := j.signer.(*key.Signer)
		if !ok || ks == nil {
			return nil, review.AgentRefuse(review.AgentNoVerifier, "key mode: agent-session evidence is verified with the job's signing key, and there is none")
		}
		return review.KeyAgentOpener(handoff.KeyVerifiers{ID: ks.KeyID(), Pub: ks.Public}), nil
	}
	if err := review.CheckAgentPin(pin); err != nil {
		return nil, err
	}
	path, base := j.in.trustedRoot, j.ev.BaseRef
	if path == "" {
		return nil, review.AgentRefuse(review.AgentNoVerifier, "keyless: agent-session evidence is verified against the trusted root at input trusted-root, which is empty")
	}
	if base == "" || j.ev.BaseSHA == "" {
		return nil, review.AgentRefuse(review.AgentNoVerifier, "keyless: no base branch to pin the agent workflow's ref to")
	}
	root, err := event.ContractAt(ctx, j.ws, j.gh, j.owner, j.name, j.ev.BaseSHA, path)
	if err != nil {
		return nil, review.AgentRefuse(review.AgentNoVerifier, "trusted root %s at base %s: %v", path, event.ShortSHA(j.ev.BaseSHA), err)
	}
	issuer := sigstore.DefaultIssuer
	if c, err := j.ownClaims(ctx); err == nil {
		issuer = c.Issuer
	}
	v, err := review.AgentVerifiers(root, path, issuer, j.repo, pin.Workflow, base)
	if err != nil {
		return nil, err
	}
	return review.KeylessAgentOpener(v), nil
}
