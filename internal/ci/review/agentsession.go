package review

// The from_agent_session fact (ADR 0021). Decide never sets it by itself:
// a caller that can verify agent-session evidence passes an
// AgentSessionFetcher (internal/ci/action's lists the agent workflow's signed
// artifact for the head and verifies it with AgentEvidence, agentevidence.go).
// The fact is proven or false; false always carries a reason, and the
// decision (Decision.AgentSession) says which. Absence of evidence is not
// evidence: a pull request can hide it (not upload, upload under another
// name), never forge it, so the fact is safe only where true relaxes.

import (
	"context"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/contract"
)

// AgentSession is the from_agent_session fact and what it rests on.
type AgentSession struct {
	Proven bool `json:"proven"`
	// Reason is why it is not proven (a typed reason such as no-artifact,
	// signature-invalid, other-commit), Detail says more.
	Reason   string `json:"reason,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Artifact string `json:"artifact,omitempty"`
	// Run and Implementation are the successor and implementation runs
	// of accepted evidence; Sessions how many sessions the latter holds.
	Run            string `json:"run,omitempty"`
	Implementation string `json:"implementation,omitempty"`
	Sessions       int    `json:"sessions,omitempty"`
}

// ReasonNoFetcher is the fact's reason when nothing could look for
// evidence.
const ReasonNoFetcher = "no-verifier"

// AgentSessionFetcher finds and verifies the evidence that head was
// produced under a recorded agent session.
type AgentSessionFetcher interface {
	AgentSession(ctx context.Context, head string) AgentSession
}

// Options are DecideWith's optional fact providers.
type Options struct {
	AgentSession AgentSessionFetcher
}

// DecideWith is Decide with the fact providers of opts. The
// agent-session fact is looked up only when a rule reads it.
func DecideWith(ctx context.Context, gh *github.Client, owner, repo string, pr int, head string, rule contract.Approval, opts Options) (Decision, error) {
	return decide(ctx, gh, owner, repo, pr, head, rule, opts)
}

// agentSessionFact sets in's from_agent_session fact from opts.
func agentSessionFact(ctx context.Context, in *Input, opts Options) {
	if !approval.UsesAgentSession(in.Rule) {
		return
	}
	f := AgentSession{Reason: ReasonNoFetcher, Detail: "no agent-session evidence was looked for"}
	if opts.AgentSession != nil {
		f = opts.AgentSession.AgentSession(ctx, in.Head)
	}
	in.RuleFacts.FromAgentSession = f.Proven
	in.RuleFacts.AgentSession = &f
}
