package review

import (
	"context"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/artifact"
)

// FindAgentEvidence is the from_agent_session fact for head in
// owner/repo: the newest of the listed artifacts (agentArtifacts) that
// open verifies (agentEvidence).
func FindAgentEvidence(ctx context.Context, gh *github.Client, owner, repo, head string, open bundle.AgentSessionOpener) AgentSession {
	name := AgentSessionArtifactPrefix + head
	ids, err := agentArtifacts(ctx, gh, owner, repo, name)
	if err != nil {
		return AgentRefusal(err, name)
	}
	download := func(ctx context.Context, id int64) ([]byte, error) {
		return artifact.Download(ctx, gh, owner, repo, id, MaxAgentArtifact)
	}
	return agentEvidence(ctx, name, ids, download, bundle.AgentSessionWant{Commit: head, Repo: owner + "/" + repo}, open)
}

// agentArtifacts lists artifact name and returns the ids of the unexpired
// ones of this repository's workflow runs, newest first (artifact.Own).
func agentArtifacts(ctx context.Context, gh *github.Client, owner, repo, name string) ([]int64, error) {
	own, fork, err := artifact.Own(ctx, gh, owner, repo, name, "")
	switch {
	case err != nil:
		return nil, AgentRefuse(AgentAPI, "%v", err)
	case len(own) == 0 && fork > 0:
		return nil, AgentRefuse(AgentFork, "%d artifact(s) %s come from workflow runs of a fork: not trusted", fork, name)
	case len(own) == 0:
		return nil, AgentRefuse(AgentNoArtifact, "no unexpired artifact %s: no evidence that the head was produced under a recorded agent session", name)
	}
	ids := make([]int64, len(own))
	for i, a := range own {
		ids[i] = a.ID
	}
	return ids, nil
}
