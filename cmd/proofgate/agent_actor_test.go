package main

import (
	"testing"

	"github.com/proofgate/proofgate/kernel/actor"
)

// TestClientAgentIsAValidActor: the agent identity an MCP client's name
// becomes always passes actor.Check (session start refuses one that does
// not), falling back to "mcp-client" for a name in Cyrillic or Greek
// beside the Latin "mcp:" prefix, or holding an invisible character.
func TestClientAgentIsAValidActor(t *testing.T) {
	for client, want := range map[string]string{
		"claude-code": "mcp:claude-code", "": "mcp-client", "Клиент": "mcp-client", "Πελάτης": "mcp-client",
		"x\u00a0y": "mcp-client", "a\u3164": "mcp-client",
	} {
		got := clientAgent(client)
		if got != want || actor.Check("agent", got) != nil {
			t.Errorf("clientAgent(%q) = %q, want %q (check: %v)", client, got, want, actor.Check("agent", got))
		}
	}
}
