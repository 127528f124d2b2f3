package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/proofgate/proofgate/internal/policy"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Outcome is the structuredContent of every tools/call answer.
type Outcome struct {
	Action     string `json:"action,omitempty"`
	Status     string `json:"status"` // finished | blocked | pending-approval | rejected | refused
	RuleID     string `json:"rule_id,omitempty"`
	Result     string `json:"result,omitempty"`  // success | failure | denied | crashed
	Outcome    string `json:"outcome,omitempty"` // the runtime's: passed, failed, timeout, output-limit, oom, error
	ExitCode   *int   `json:"exit_code,omitempty"`
	InputHash  string `json:"input_hash,omitempty"`
	OutputHash string `json:"output_hash,omitempty"`
	Error      string `json:"error,omitempty"`
}

// StatusRefused is the Outcome status of a call the session refused
// before any decision (bad arguments, an ambiguous action, ...).
const StatusRefused = "refused"

// PendingText is the text of a call waiting for approval.
func PendingText(run, action string) string {
	return fmt.Sprintf("waiting for approval of action %s (proofgate tool approve %s %s --actor NAME); call again with the same arguments after approval", action, run, action)
}

// BlockedText is the text of a blocked call.
func BlockedText(d policy.Decision) string {
	why := d.Reason
	if why == "" && d.Rule < 0 {
		why = "no policy rule allows this tool (block by default)"
	}
	if why == "" {
		return "blocked by policy rule " + d.RuleID
	}
	return fmt.Sprintf("blocked by policy rule %s: %s", d.RuleID, why)
}

// toResult maps a session result to the MCP answer (package doc).
func toResult(run string, r session.Result) *sdk.CallToolResult {
	o := Outcome{Action: r.Action, Status: string(r.Status), RuleID: r.Decision.RuleID, InputHash: r.InputHash}
	switch r.Status {
	case session.Blocked:
		return answer(true, o, BlockedText(r.Decision))
	case session.PendingApproval:
		return answer(false, o, PendingText(run, r.Action))
	case session.Rejected:
		return answer(true, o, fmt.Sprintf("action %s was rejected by a human; do not repeat this call (a call with other arguments is a new action)", r.Action))
	}
	code := r.ExitCode
	o.Result, o.Outcome, o.ExitCode, o.OutputHash = r.Result, string(r.Outcome), &code, r.OutputHash
	texts := []string{text(r.Stdout)}
	failed := r.Result != "success"
	if failed || len(r.Stderr) > 0 {
		line := fmt.Sprintf("result %s, exit code %d", r.Result, r.ExitCode)
		if r.Outcome != "" && r.Outcome != runtime.Passed && r.Outcome != runtime.Failed {
			line = fmt.Sprintf("result %s (%s), exit code %d", r.Result, r.Outcome, r.ExitCode)
		}
		texts = append(texts, line)
	}
	if len(r.Stderr) > 0 {
		texts = append(texts, "stderr:\n"+text(r.Stderr))
	}
	return answer(failed, o, texts...)
}

// refusal is the answer to a call the session refused with err.
func refusal(err error) *sdk.CallToolResult {
	o := Outcome{Status: StatusRefused, Error: err.Error()}
	var amb *session.AmbiguousError
	if errors.As(err, &amb) {
		return answer(true, o, err.Error()+" (a human decides: proofgate tool retry|abandon RUN ACTION --actor NAME)")
	}
	return answer(true, o, "proofgate refused the call: "+err.Error())
}

// answer is a tools/call result: the texts for a reader, then (as the
// MCP specification asks of a tool with structured content) the
// serialized structuredContent as the last text block.
func answer(isErr bool, o Outcome, texts ...string) *sdk.CallToolResult {
	res := &sdk.CallToolResult{IsError: isErr, StructuredContent: o}
	for _, t := range texts {
		res.Content = append(res.Content, &sdk.TextContent{Text: t})
	}
	b, err := json.Marshal(o)
	if err != nil { // an Outcome is strings and an int: cannot fail
		panic(err)
	}
	res.Content = append(res.Content, &sdk.TextContent{Text: string(b)})
	return res
}

// OutcomeSchema is every tool's outputSchema: the JSON Schema (2020-12)
// that every structuredContent (an Outcome) conforms to.
func OutcomeSchema() map[string]any {
	str := map[string]any{"type": "string"}
	enum := func(vs ...string) map[string]any { return map[string]any{"type": "string", "enum": vs} }
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action":      str,
			"status":      enum(string(session.Finished), string(session.Blocked), string(session.PendingApproval), string(session.Rejected), StatusRefused),
			"rule_id":     str,
			"result":      enum(replay.ResultSuccess, replay.ResultFailure, replay.ResultDenied, replay.ResultCrashed),
			"outcome":     str,
			"exit_code":   map[string]any{"type": "integer"},
			"input_hash":  str,
			"output_hash": str,
			"error":       str,
		},
		"required":             []any{"status"},
		"additionalProperties": false,
	}
}

// text is tool output as MCP text: valid UTF-8.
func text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }
