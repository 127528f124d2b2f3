package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/mcp"
	"github.com/proofgate/proofgate/internal/policy"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
)

func toolCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "tool",
		Short: "List, call and decide the contract's agent tools",
		Long: `The contract's tools: section, as an agent sees it (list, exec) and as a
human decides it (approve, reject, retry, abandon). Every call passes the
policy gate (exact tool name, first matching rule, block by default) and is
recorded in the run's event log with hashes of its input and output.

Exit codes: 0 done (the tool succeeded, the decision is recorded); 1 blocked,
rejected, the tool failed, or the decision was refused; 2 bad input (an
unknown action, arguments that do not fit the tool's params); 3 waiting for
approval; 4 environment (no Docker for a docker tool, unwritable state).`,
	}
	c.AddCommand(toolListCmd(g), toolExecCmd(g))
	for _, v := range decideVerbs {
		c.AddCommand(toolDecideCmd(g, v))
	}
	return c
}

func toolListCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list RUN [--json]",
		Short: "List the tools an agent may call in RUN, with the rule that decides each",
		Long: `List the tools of RUN's frozen contract that some policy rule could allow
(a blocked tool is not listed: tools/list shows the same set), with the
effect of the rule that decides each (allow, require-approval), its runtime
and, with --json, the JSON Schema of its arguments.

  proofgate tool list latest
  proofgate tool list latest --json | jq '.[].name'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := app.ListTools(g.state, args[0])
			if err != nil {
				return classify(err)
			}
			if asJSON {
				return writeJSON(g.stdout, rows)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tEFFECT\tRULE\tRUNTIME\tDESCRIPTION")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", esc(r.Name), r.Effect, esc(r.RuleID), esc(r.Runtime), esc(r.Description))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// execDoc is what 'tool exec --json' prints.
type execDoc struct {
	RunID       string          `json:"run_id"`
	Session     string          `json:"session"`
	SessionOpen bool            `json:"session_open"`
	Action      string          `json:"action,omitempty"`
	Status      session.Status  `json:"status"`
	Decision    policy.Decision `json:"decision"`
	Result      string          `json:"result,omitempty"`
	ExitCode    *int            `json:"exit_code,omitempty"`
	InputHash   string          `json:"input_hash,omitempty"`
	OutputHash  string          `json:"output_hash,omitempty"`
	Stdout      string          `json:"stdout,omitempty"`
	Stderr      string          `json:"stderr,omitempty"`
	Message     string          `json:"message,omitempty"`
}

type execFlagsTool struct {
	inputFile, sess, agent, traceparent, tracestate string
	asJSON                                          bool
}

func toolExecCmd(g *globals) *cobra.Command {
	var f execFlagsTool
	c := &cobra.Command{
		Use:   "exec RUN TOOL --input FILE|- [--session S] [--traceparent TP] [--json]",
		Short: "Call one tool through the policy gate, as an MCP tools/call does",
		Long: `Call TOOL of RUN (IMPLEMENTING) with the JSON arguments object in --input
(a file, or - for stdin; at most 8 MiB), through the same gate, runtime and
recorder as 'proofgate mcp'. The tool's stdout and stderr are copied to
stdout and stderr, byte for byte; a summary line goes to stderr.

Without --session the call gets a session of its own, ended after the call
— unless the call waits for approval: then the session stays open, and the
same command with --session S (printed) runs the call once a human approved
it. With --session S (from 'proofgate session start'), S stays open.

--traceparent (W3C Trace Context, with --tracestate) puts the call in a
trace: the receipt records the trace id, a fresh span id and the parent's.

  echo '{"name":"Ada"}' | proofgate tool exec latest greet --input -
  proofgate tool exec "$RUN" deploy --input deploy.json --session "$S"   # exit 3: waiting
  proofgate tool approve "$RUN" a-0123456789ab --actor alice             # another person
  proofgate tool exec "$RUN" deploy --input deploy.json --session "$S"   # runs

Exit 0 the tool succeeded; 1 blocked, rejected or the tool failed; 2 bad
arguments; 3 waiting for approval; 4 environment.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return toolExec(cmd, g, &f, args[0], args[1])
		},
	}
	c.Flags().StringVar(&f.inputFile, "input", "", "the arguments: a JSON object in FILE, or - for stdin (required)")
	c.Flags().StringVar(&f.sess, "session", "", "call in this open session (from 'proofgate session start')")
	c.Flags().StringVar(&f.agent, "agent", "shell-agent", "agent identity of the session this call starts (without --session)")
	c.Flags().StringVar(&f.traceparent, "traceparent", "", "W3C traceparent of the caller's span")
	c.Flags().StringVar(&f.tracestate, "tracestate", "", "W3C tracestate (with --traceparent)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print the result as JSON (stdout and stderr as UTF-8 text)")
	return c
}

func toolExec(cmd *cobra.Command, g *globals, f *execFlagsTool, runArg, name string) error {
	if f.inputFile == "" {
		return usageErr(errors.New("--input is required (a JSON object in a file, or - for stdin)"))
	}
	if f.tracestate != "" && f.traceparent == "" {
		return usageErr(errors.New("--tracestate needs --traceparent"))
	}
	if f.sess == "" {
		if err := checkAgent(f.agent); err != nil {
			return err
		}
	}
	args, err := readInput(cmd.InOrStdin(), f.inputFile)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	repo, err := repoDir(ctx)
	if err != nil {
		return err
	}
	rts := app.NewToolRuntimes(ctx)
	defer rts.Close()
	called, err := app.CallTool(ctx, app.CallOptions{
		SessionOptions: app.SessionOptions{State: g.state, Run: runArg, RepoDir: repo, Agent: f.agent, Session: f.sess, Runtimes: rts},
		Call:           session.Call{Tool: name, Args: args, TraceParent: f.traceparent, TraceState: f.tracestate}})
	if err != nil {
		return classifySession(err)
	}
	return printExec(g, called, f.asJSON)
}

// readInput reads --input, bounded by input.MaxInput.
func readInput(stdin io.Reader, file string) ([]byte, error) {
	r := stdin
	if file != "-" {
		f, err := bounded.Open(file)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--input: %w", err))
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, input.MaxInput+1))
	if err != nil {
		return nil, usageErr(fmt.Errorf("--input %s: %w", file, err))
	}
	if len(b) > input.MaxInput {
		return nil, usageErr(fmt.Errorf("--input %s: larger than %d bytes", file, input.MaxInput))
	}
	return b, nil
}

func printExec(g *globals, called *app.Called, asJSON bool) error {
	res, runID, sess := called.Result, called.Run, called.Session
	doc := execDoc{RunID: runID, Session: sess, SessionOpen: called.SessionOpen, Action: res.Action, Status: res.Status,
		Decision: res.Decision, InputHash: res.InputHash}
	var code error
	switch res.Status {
	case session.Blocked:
		doc.Message, code = mcp.BlockedText(res.Decision), silent(exit.Refused)
	case session.PendingApproval:
		doc.Message, code = mcp.PendingText(runID, res.Action)+fmt.Sprintf(" (--session %s)", sess), silent(exit.Awaiting)
	case session.Rejected:
		doc.Message, code = fmt.Sprintf("action %s was rejected", res.Action), silent(exit.Refused)
	default:
		ec := res.ExitCode
		doc.Result, doc.ExitCode, doc.OutputHash = res.Result, &ec, res.OutputHash
		doc.Message = fmt.Sprintf("action %s: %s, exit code %d", res.Action, res.Result, res.ExitCode)
		if res.Result != "success" {
			code = silent(exit.Refused)
		}
	}
	if asJSON {
		doc.Stdout, doc.Stderr = strings.ToValidUTF8(string(res.Stdout), "\uFFFD"), strings.ToValidUTF8(string(res.Stderr), "\uFFFD")
		if err := writeJSON(g.stdout, doc); err != nil {
			return err
		}
		return code
	}
	g.stdout.Write(res.Stdout)
	g.stderr.Write(res.Stderr)
	fmt.Fprintf(g.stderr, "%s (run %s, session %s)\n", doc.Message, runID, sess)
	return code
}

// decideVerb is one human decision on a call: its name is the decision
// (replay.DecisionApprove, ...).
type decideVerb struct {
	name, short, example string
	needsReason          bool
}

var decideVerbs = []decideVerb{
	{name: replay.DecisionApprove, short: "Approve an action waiting for approval (bound to its input hash)",
		example: "proofgate tool approve latest a-0123456789ab --actor alice"},
	{name: replay.DecisionReject, short: "Reject an action waiting for approval", needsReason: true,
		example: `proofgate tool reject latest a-0123456789ab --actor alice --reason "not today"`},
	{name: replay.DecisionRetry, short: "Let an ambiguous action run again, as a new action decided by policy again",
		example: "proofgate tool retry latest a-0123456789ab --actor alice"},
	{name: replay.DecisionAbandon, short: "Close an ambiguous action for good: it never runs again", needsReason: true,
		example: `proofgate tool abandon latest a-0123456789ab --actor alice --reason "finished by hand"`},
}

// decideDoc is what the decision verbs print with --json.
type decideDoc struct {
	RunID    string `json:"run_id"`
	Action   string `json:"action"`
	Decision string `json:"decision"`
	Actor    string `json:"actor"`
	Reason   string `json:"reason,omitempty"`
}

func toolDecideCmd(g *globals, v decideVerb) *cobra.Command {
	var actor, reason string
	var asJSON bool
	use := v.name + " RUN ACTION --actor NAME [--reason TEXT] [--json]"
	if v.needsReason {
		use = v.name + " RUN ACTION --actor NAME --reason TEXT [--json]"
	}
	c := &cobra.Command{
		Use:   use,
		Short: v.short,
		Long: v.short + `.

ACTION is an action id (a-<12 hex>) from the agent's answer, 'proofgate
status RUN'. The decision is recorded as
tool.decided by --actor, who may not be the session's own agent identity.
approve and reject apply to an action waiting for approval, and bind to the
exact input hash of that call: the agent's next call with the same tool and
arguments in the same session runs (or is refused); other arguments are a
new action. retry and abandon apply to an ambiguous action (started, never
finished, its recorder dead); retry is refused while anything that call
left still runs (its processes, its container: 'proofgate clean orphans' stops what a
dead recorder left). Exit 1 when the action cannot take the decision
(already decided, not waiting, not ambiguous, still running); 2 for an
unknown action.

  ` + v.example,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if actor == "" {
				return usageErr(errors.New("--actor is required"))
			}
			if v.needsReason && reason == "" {
				return usageErr(fmt.Errorf("--reason is required for %s", v.name))
			}
			if err := checkNames(actor, reason); err != nil {
				return err
			}
			if err := printable.Check("ACTION", args[1]); err != nil {
				return usageErr(err)
			}
			// retry asks the tool's runtime whether its call still runs
			rts := app.NewToolRuntimes(cmd.Context())
			defer rts.Close()
			repo, _ := repoDir(cmd.Context()) // outside a repository: none
			id, err := app.DecideCall(app.DecideOptions{State: g.state, Run: args[0], RepoDir: repo,
				Call: args[1], Decision: v.name, Actor: actor, Reason: reason, Runtimes: rts})
			if err != nil {
				return classifySession(err)
			}
			doc := decideDoc{RunID: id, Action: args[1], Decision: v.name, Actor: actor, Reason: reason}
			if asJSON {
				return writeJSON(g.stdout, doc)
			}
			fmt.Fprintf(g.stdout, "action %s: %s recorded by %s\n", args[1], v.name, esc(actor))
			if v.name == "approve" {
				fmt.Fprintln(g.stdout, "next: the agent calls the tool again with the same arguments, in the same session; it runs then")
			}
			return nil
		},
	}
	c.Flags().StringVar(&actor, "actor", "", "who decides (required, recorded)")
	c.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
