package approval

import "github.com/proofgate/proofgate/kernel/contract"

// UsesAgentSession reports whether a rule of a reads from_agent_session:
// only then does a provider look for agent-session evidence.
func UsesAgentSession(a contract.Approval) bool {
	for _, r := range a.Rules {
		if r.If.FromAgentSession != nil {
			return true
		}
	}
	return false
}
