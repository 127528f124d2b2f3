package app

import (
	"context"
	"fmt"
	"os"

	"github.com/proofgate/proofgate/internal/policy"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/tool"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ListedTool is one row of 'proofgate tool list': a tool some policy rule
// could allow, with the rule that decides it. Its JSON is tool list
// --json's.
type ListedTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Effect      policy.Effect  `json:"effect"`
	RuleID      string         `json:"rule_id"`
	Runtime     string         `json:"runtime"`
	InputSchema map[string]any `json:"input_schema"`
}

// ListTools resolves id ("latest" too) in the state directory, audits the
// run (a projection that only lags its log is read from the log) and
// returns the visible tools of its frozen contract (policy.Visible, as
// tools/list shows them).
func ListTools(state, id string) ([]ListedTool, error) {
	store := run.NewStore(state)
	id, err := store.Resolve(id)
	if err != nil {
		return nil, err
	}
	if _, err := run.Audit(store.Path(id)); err != nil && !IsLag(err) {
		return nil, err
	}
	c, _, err := replay.ReadContract(os.DirFS(store.Path(id)))
	if err != nil {
		return nil, err
	}
	gate := policy.New(c)
	rows := []ListedTool{}
	for _, t := range gate.Visible() {
		d := gate.Decide(t.Name)
		rows = append(rows, ListedTool{Name: t.Name, Description: t.Description, Effect: d.Effect, RuleID: d.RuleID, Runtime: t.Runtime, InputSchema: tool.InputSchema(t)})
	}
	return rows, nil
}

// CallOptions say which tool to call, with which arguments, in which
// session.
type CallOptions struct {
	// SessionOptions name the session; without Session the call gets a
	// session of its own, ended after the call unless the call waits for
	// approval.
	SessionOptions
	Call session.Call
}

// Called is a tool call's result, with the session it was made in.
type Called struct {
	Result session.Result
	// Run and Session are the run's and the session's ids.
	Run, Session string
	// SessionOpen says the session stays open: it was given, or the call
	// waits for approval (the same call in that session runs once a human
	// approved it).
	SessionOpen bool
}

// CallTool makes one call through the policy gate, runtime and recorder
// of an MCP tools/call. The errors are returned as they are, for the
// caller to classify; a session of its own that cannot be ended is an
// error naming the session.
func CallTool(ctx context.Context, o CallOptions) (*Called, error) {
	s, err := OpenSession(ctx, o.SessionOptions)
	if err != nil {
		return nil, err
	}
	defer s.Close() // the session may stay open: its kept files go
	res, err := s.Call(ctx, o.Call)
	open := o.Session != "" || (err == nil && res.Status == session.PendingApproval)
	if !open {
		if endErr := s.End("one call"); endErr != nil && err == nil {
			return nil, fmt.Errorf("session %s: %w", s.ID(), endErr)
		}
	}
	if err != nil {
		return nil, err
	}
	return &Called{Result: res, Run: s.Run(), Session: s.ID(), SessionOpen: open}, nil
}

// DecideOptions say which call to decide, how and by whom.
type DecideOptions struct {
	// State is the state directory; Run a run id or "latest"; RepoDir the
	// repository ("" outside one).
	State, Run, RepoDir string
	// Call is the call's id (a-<12 hex>).
	Call string
	// Decision is replay.DecisionApprove, DecisionReject (a call waiting
	// for approval), DecisionRetry or DecisionAbandon (an ambiguous call).
	Decision string
	// Actor decides, for Reason.
	Actor, Reason string
	// Runtimes answer retry whether the call's tool still runs.
	Runtimes *ToolRuntimes
}

// DecideCall records a human decision on a call (internal/session's
// Approve, Reject, Retry, Abandon), whose errors it returns as they are,
// and returns the run's id (o.Run when it does not resolve).
func DecideCall(o DecideOptions) (string, error) {
	so := session.Options{StateDir: o.State, Run: o.Run, RepoDir: o.RepoDir, Runtime: o.Runtimes.get}
	var err error
	switch o.Decision {
	case replay.DecisionApprove:
		err = session.Approve(so, o.Call, o.Actor)
	case replay.DecisionReject:
		err = session.Reject(so, o.Call, o.Actor, o.Reason)
	case replay.DecisionRetry:
		err = session.Retry(so, o.Call, o.Actor)
	case replay.DecisionAbandon:
		err = session.Abandon(so, o.Call, o.Actor, o.Reason)
	default:
		err = fmt.Errorf("unknown decision %q", o.Decision)
	}
	if err != nil {
		return "", err
	}
	if id, err := run.NewStore(o.State).Resolve(o.Run); err == nil {
		return id, nil
	}
	return o.Run, nil
}
