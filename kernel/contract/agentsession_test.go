package contract

import (
	"errors"
	"strings"
	"testing"
)

func TestAgentSessionsPinResolves(t *testing.T) {
	for _, w := range []string{".github/workflows/agent.yml", ".github/workflows/agent-run_2.yaml"} {
		r, err := parseRules(t, "approval:\n  agent_sessions: {workflow: "+w+"}\n")
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		if r.Approval.AgentSessions == nil || r.Approval.AgentSessions.Workflow != w {
			t.Fatalf("%s: %+v", w, r.Approval)
		}
		b, err := r.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"agent_sessions":{"workflow":"`+w+`"}`) {
			t.Fatalf("the pin is not in the canonical form: %s", b)
		}
	}
}

// TestAgentSessionsHashUnchanged: a contract without the pin hashes as
// before the pin existed, and the pin (and its value) is in the hash.
func TestAgentSessionsHashUnchanged(t *testing.T) {
	r, err := parseRules(t, "approval: {required: 2}\n")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Canonical()
	if strings.Contains(string(b), "agent_sessions") {
		t.Fatalf("an unset pin is in the canonical form: %s", b)
	}
	h0, _ := r.Hash()
	seen := map[string]string{h0: "none"}
	for _, w := range []string{".github/workflows/agent.yml", ".github/workflows/other.yml"} {
		r, err := parseRules(t, "approval:\n  required: 2\n  agent_sessions: {workflow: "+w+"}\n")
		if err != nil {
			t.Fatal(err)
		}
		h, _ := r.Hash()
		if prev, dup := seen[h]; dup {
			t.Fatalf("pin %s hashes as %s", w, prev)
		}
		seen[h] = w
	}
}

// TestAgentSessionsPinRefused: every path that is not a workflow GitHub
// runs, and a profile that tries to set or move the pin.
func TestAgentSessionsPinRefused(t *testing.T) {
	const at = "approval.agent_sessions.workflow"
	for name, c := range map[string]struct{ yaml, path, msg string }{
		"parent escape":     {`approval: {agent_sessions: {workflow: .github/workflows/../../x.yml}}`, at, `".."`},
		"dotdot name":       {`approval: {agent_sessions: {workflow: .github/workflows/..yml}}`, at, `".."`},
		"absolute":          {`approval: {agent_sessions: {workflow: /.github/workflows/agent.yml}}`, at, "absolute"},
		"outside workflows": {`approval: {agent_sessions: {workflow: ci/agent.yml}}`, at, "not a workflow file"},
		"subdirectory":      {`approval: {agent_sessions: {workflow: .github/workflows/sub/agent.yml}}`, at, "no subdirectory"},
		"not yaml":          {`approval: {agent_sessions: {workflow: .github/workflows/agent.json}}`, at, "not a workflow file"},
		"ref smuggled":      {`approval: {agent_sessions: {workflow: ".github/workflows/agent.yml@refs/heads/topic"}}`, at, "not a workflow file"},
		"dot slash":         {`approval: {agent_sessions: {workflow: ./.github/workflows/agent.yml}}`, at, "not a workflow file"},
		"empty":             {`approval: {agent_sessions: {workflow: ""}}`, at, "empty"},
		"too long":          {`approval: {agent_sessions: {workflow: .github/workflows/` + strings.Repeat("a", 300) + `.yml}}`, at, "at most 255"},
		"missing":           {`approval: {agent_sessions: {}}`, "approval.agent_sessions", ""},
		"unknown member":    {`approval: {agent_sessions: {workflow: .github/workflows/agent.yml, ref: main}}`, "approval.agent_sessions", ""},
		"profile sets pin":  {"approval: {agent_sessions: {workflow: .github/workflows/agent.yml}}\nprofiles: {p: {approval: {agent_sessions: {workflow: .github/workflows/evil.yml}}}}", "profiles.p.approval.agent_sessions", "a profile cannot change the agent-session pin"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseRules(t, c.yaml+"\n")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v, want *Error", err)
			}
			if !strings.HasPrefix(e.Path, c.path) || !strings.Contains(e.Error(), c.msg) {
				t.Fatalf("%q: %v, want path %s and %q", e.Path, err, c.path, c.msg)
			}
		})
	}
}

// TestAgentSessionsPinSurvivesProfile: a profile's resolution keeps the
// base contract's pin.
func TestAgentSessionsPinSurvivesProfile(t *testing.T) {
	r, err := Parse("contract.yaml", []byte(rulesBase+"approval: {agent_sessions: {workflow: .github/workflows/agent.yml}}\nprofiles: {p: {approval: {required: 2}}}\n"), "p")
	if err != nil {
		t.Fatal(err)
	}
	if r.Approval.AgentSessions == nil || r.Approval.AgentSessions.Workflow != ".github/workflows/agent.yml" || r.Approval.Required != 2 {
		t.Fatalf("%+v", r.Approval)
	}
}
