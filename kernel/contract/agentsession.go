package contract

import (
	"fmt"
	"regexp"
	"strings"
)

// AgentSessions pins the source of the evidence behind the approval
// rules' from_agent_session fact (approval.agent_sessions; docs/SPEC.md
// §1 "Agent-session pin"). It lives in the contract because a pull
// request's approval job runs the workflow file of the pull request, so
// its `with:` inputs are the pull request's to choose, while the contract
// is read from the base branch: only the base branch decides which
// workflow's signature proves agent work.
type AgentSessions struct {
	// Workflow is the agent workflow file, ".github/workflows/NAME.yml"
	// (or .yaml). Keyless evidence counts only when Fulcio certified it
	// for OWNER/REPO/<Workflow>@refs/heads/<base branch>.
	Workflow string `json:"workflow"`
}

type rawAgentSessions struct {
	Workflow *string `json:"workflow"`
}

// MaxWorkflowPath bounds approval.agent_sessions.workflow.
const MaxWorkflowPath = 255

// workflowFile is a workflow GitHub runs: directly in .github/workflows
// (GitHub ignores subdirectories), a plain file name, .yml or .yaml. The
// name's characters are the ones a certificate's workflow ref carries
// without escaping.
var workflowFile = regexp.MustCompile(`^\.github/workflows/[A-Za-z0-9_.-]+\.ya?ml$`)

// ValidWorkflowPath reports why p is not a workflow file path
// approval.agent_sessions.workflow accepts, or nil.
func ValidWorkflowPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty: name the agent workflow, e.g. .github/workflows/agent.yml")
	case len(p) > MaxWorkflowPath:
		return fmt.Errorf("%d bytes, at most %d", len(p), MaxWorkflowPath)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is absolute: write the path relative to the repository root, e.g. .github/workflows/agent.yml", p)
	case strings.Contains(p, ".."):
		return fmt.Errorf("%q contains \"..\"", p)
	case !workflowFile.MatchString(p):
		return fmt.Errorf("%q is not a workflow file .github/workflows/NAME.yml or .yaml (NAME of letters, digits, '.', '_', '-'; no subdirectory, GitHub runs none)", p)
	}
	return nil
}

// applyAgentSessions resolves approval.agent_sessions. A profile may not
// set it (base != nil): a workflow chooses the profile.
func (p *parser) applyAgentSessions(a *Approval, ra *rawApproval, at fieldPath, base *Approval) error {
	if ra.AgentSessions == nil {
		return nil
	}
	at = at.key("agent_sessions")
	if base != nil {
		return p.errf(at, "a profile cannot change the agent-session pin")
	}
	if ra.AgentSessions.Workflow == nil {
		return p.errf(at.key("workflow"), "required: the agent workflow whose signed evidence proves from_agent_session")
	}
	w := *ra.AgentSessions.Workflow
	if err := ValidWorkflowPath(w); err != nil {
		return p.errf(at.key("workflow"), "%v", err)
	}
	a.AgentSessions = &AgentSessions{Workflow: w}
	return nil
}
