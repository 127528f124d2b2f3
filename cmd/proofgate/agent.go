package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/mcp"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/input"
)

// The agent verbs (issue 13): mcp, session, tool. They are thin: opening
// sessions, making and deciding calls and planning the implementation run
// are internal/app's, the recording internal/session's; these parse flags
// and print.

// addAgentCommands registers mcp, session and tool.
func addAgentCommands(root *cobra.Command, g *globals) {
	root.AddCommand(mcpCmd(g), sessionCmd(g), toolCmd(g))
}

// checkAgent refuses an --agent that is not a printable one-line name.
func checkAgent(agent string) error {
	if agent == "" {
		return usageErr(errors.New("--agent must not be empty"))
	}
	if len(agent) > 200 {
		return usageErr(fmt.Errorf("--agent is %d bytes; at most 200", len(agent)))
	}
	return checkNames(agent, "")
}

// classifySession is classify for the agent verbs: a tool call's
// arguments that are not valid input (input.Error) or not printable
// (printable.Error) are the caller's to correct — those helpers' errors
// carry no class of their own, since elsewhere the same bytes come from a
// run under verification.
func classifySession(err error) error {
	var ie *input.Error
	var pe *printable.Error
	var ni *session.NotImplementingError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ni):
		return refusedErr(fmt.Errorf("%w; plan one with 'proofgate plan --implement'", err))
	case errors.As(err, &ie), errors.As(err, &pe):
		if _, classed := exit.Of(err); !classed {
			return usageErr(err)
		}
	}
	return classify(err)
}

func mcpCmd(g *globals) *cobra.Command {
	var agent, sess string
	var pf planFlags
	c := &cobra.Command{
		Use:   "mcp [RUN] [--agent ID] [--session S]",
		Short: "Serve a run's tools to an agent over MCP (stdio)",
		Long: `Serve the contract's tools to an AI agent as a Model Context Protocol server
on stdin/stdout. Stdout carries nothing but MCP frames; the log goes to
stderr. Point an MCP client at this command (Claude Code: .mcp.json with
{"mcpServers":{"proofgate":{"command":"proofgate","args":["mcp"]}}}).

Without RUN, a new run is planned from the contract and enters IMPLEMENTING
(as 'proofgate plan --implement' does); its id is logged on stderr. With
RUN (a run id or "latest"), the run must be IMPLEMENTING. When the work
tree has uncommitted changes, planning is refused: the server still answers
the handshake and lists the tools, answers every call with that refusal
(isError, naming the paths and the fix), records nothing, and exits 2 when
the client goes away.

A session starts when the client initializes and ends (session.ended)
when stdin closes or on SIGTERM/SIGINT. With --session S the server joins
a session 'proofgate session start' opened, and leaves it open.

tools/list shows the tools some policy rule could allow. Every tools/call
passes the policy gate and is recorded: blocked calls answer isError with
the rule; a call that needs approval answers with the action to approve
('proofgate tool approve RUN ACTION --actor NAME' from another terminal);
calling again with the same arguments then runs it.

  proofgate mcp                          # plan a run and serve it
  proofgate mcp latest --agent claude    # serve the newest run
  proofgate mcp "$RUN" --session "$S"    # join a session started earlier`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if agent != "" {
				if err := checkAgent(agent); err != nil {
					return err
				}
			}
			ctx, cancel := signalContext()
			defer cancel()
			runArg := ""
			if len(args) == 1 {
				runArg = args[0]
			}
			return serveMCP(ctx, g, cmd.InOrStdin(), &pf, runArg, agent, sess)
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "agent identity recorded in session.started (default: the MCP client's name)")
	c.Flags().StringVar(&sess, "session", "", "join this open session instead of starting one (needs RUN)")
	c.Flags().StringVar(&pf.profile, "profile", "", "contract profile to resolve (without RUN)")
	c.Flags().BoolVar(&pf.allowDirty, "allow-dirty", false, "plan on a work tree with uncommitted changes (without RUN)")
	return c
}

// serveMCP plans (without runArg), then serves the session over stdio.
func serveMCP(ctx context.Context, g *globals, stdin io.Reader, pf *planFlags, runArg, agent, sess string) error {
	logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if sess != "" && runArg == "" {
		return usageErr(errors.New("--session needs RUN (the run the session records into)"))
	}
	if runArg == "" {
		id, err := planImplementing(ctx, g, pf)
		var de *run.DirtyError
		if errors.As(err, &de) {
			return serveRefusal(ctx, g, stdin, pf, logger, err)
		}
		if err != nil {
			return err
		}
		logger.Info("planned run (IMPLEMENTING)", "run", id)
		runArg = id
	}
	repo, err := repoDir(ctx)
	if err != nil {
		return err
	}
	rts := app.NewToolRuntimes(ctx)
	defer rts.Close()
	srv := mcp.New(mcp.Options{
		Name:    "proofgate",
		Version: currentBuild().Version,
		End:     sess == "",
		Logger:  logger,
		Open: func(ctx context.Context, client string) (mcp.Session, error) {
			so := app.SessionOptions{State: g.state, Run: runArg, RepoDir: repo, Agent: agent, Session: sess, Runtimes: rts}
			if so.Agent == "" {
				so.Agent = app.ClientAgent(client)
			}
			s, err := app.OpenSession(ctx, so)
			if err != nil {
				return nil, err
			}
			for _, st := range s.Stopped() {
				logger.Warn("the dead recorder's call: "+stoppedLine(st), "action", st.Action)
			}
			if len(s.Ambiguous) > 0 {
				logger.Warn("session has ambiguous actions: a human decides each with 'proofgate tool retry|abandon'", "actions", s.Ambiguous)
			}
			return s.Session, nil
		},
	})
	err = srv.Run(ctx, mcp.Stdio(stdin, g.stdout))
	if s := srv.Session(); s != nil {
		logger.Info("served", "run", s.Run(), "session", s.ID())
	}
	if err != nil {
		return classifySession(err)
	}
	return nil
}

// serveRefusal answers an MCP client when planning refused the work tree:
// the handshake and the contract's tools as usual, so the agent host shows
// why instead of "server failed", and every tools/call the refusal (isError)
// with the fix. No run is planned, no session opened, nothing recorded. It
// returns the refusal once the client goes away (exit 2).
func serveRefusal(ctx context.Context, g *globals, stdin io.Reader, pf *planFlags, logger *slog.Logger, refusal error) error {
	refusal = fmt.Errorf("%w. Nothing was planned or recorded: commit (or git-ignore) those changes, then restart the MCP server ('proofgate mcp'; add --allow-dirty to its arguments to record the changes instead)", refusal)
	logger.Error("serving no session", "error", refusal)
	c, err := pf.load(g)
	if err != nil {
		return err
	}
	srv := mcp.New(mcp.Options{Name: "proofgate", Version: currentBuild().Version, Refused: refusal, RefusedTools: c.Tools, Logger: logger})
	if err := srv.Run(ctx, mcp.Stdio(stdin, g.stdout)); err != nil {
		return classifySession(err)
	}
	return classify(refusal)
}

// planImplementing plans a run from the contract and moves it to
// IMPLEMENTING; it returns the run id.
func planImplementing(ctx context.Context, g *globals, pf *planFlags) (string, error) {
	c, err := pf.load(g)
	if err != nil {
		return "", err
	}
	id, err := app.PlanImplementing(ctx, app.ImplementOptions{Contract: c, File: g.contract,
		Plan: func() (run.PlanOptions, error) { return pf.options(ctx, g, c) }})
	if err != nil {
		return "", classify(err)
	}
	return id, nil
}

// planImplementCmd is 'plan --implement': the run id (or, --json, its
// report) on stdout.
func planImplementCmd(ctx context.Context, g *globals, pf *planFlags, asJSON bool) error {
	id, err := planImplementing(ctx, g, pf)
	if err != nil {
		return err
	}
	if !asJSON {
		fmt.Fprintln(g.stdout, id)
		return nil
	}
	rep, err := app.AuditRun(g.state, id)
	if err != nil {
		return classify(err)
	}
	return writeJSON(g.stdout, rep)
}
