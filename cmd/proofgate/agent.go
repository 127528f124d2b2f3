package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/mcp"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// The agent verbs (issue 13): mcp, session, tool. They are thin: every
// decision is internal/session's; these parse flags and print.

// addAgentCommands registers mcp, session and tool.
func addAgentCommands(root *cobra.Command, g *globals) {
	root.AddCommand(mcpCmd(g), sessionCmd(g), toolCmd(g))
}

// runtimes connects a tool's runtime the first time a call needs it: a
// contract whose tools are all processes never needs a Docker daemon.
type runtimes struct {
	ctx    context.Context
	mu     sync.Mutex
	docker *docker.Runtime
}

func (r *runtimes) get(kind string) (runtime.Runtime, error) {
	switch kind {
	case "process":
		return process.New(), nil
	case "docker":
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.docker != nil {
			return r.docker, nil
		}
		d, err := docker.New(r.ctx)
		if err != nil {
			return nil, fmt.Errorf("the tool runs in Docker, but %w (set DOCKER_HOST, or start a daemon)", err)
		}
		r.docker = d
		return d, nil
	}
	return nil, fmt.Errorf("unknown runtime %q", kind)
}

func (r *runtimes) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.docker != nil {
		r.docker.Close()
	}
}

// sessionOptions are the options of a session on runArg, from the current
// repository.
func sessionOptions(ctx context.Context, g *globals, runArg, agent string) (session.Options, *runtimes, error) {
	repo, err := repoDir(ctx)
	if err != nil {
		return session.Options{}, nil, err
	}
	rt := &runtimes{ctx: ctx}
	return session.Options{StateDir: g.state, Run: runArg, RepoDir: repo, Agent: agent, Runtime: rt.get}, rt, nil
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
	o, rt, err := sessionOptions(ctx, g, runArg, agent)
	if err != nil {
		return err
	}
	defer rt.Close()
	srv := mcp.New(mcp.Options{
		Name:    "proofgate",
		Version: currentBuild().Version,
		End:     sess == "",
		Logger:  logger,
		Open: func(ctx context.Context, client string) (mcp.Session, error) {
			so := o
			if so.Agent == "" {
				so.Agent = clientAgent(client)
			}
			if sess != "" {
				s, amb, err := session.Resume(ctx, so, sess)
				if err != nil {
					return nil, err
				}
				for _, st := range s.Stopped() {
					logger.Warn("the dead recorder's call: "+stoppedLine(st), "action", st.Action)
				}
				if len(amb) > 0 {
					logger.Warn("session has ambiguous actions: a human decides each with 'proofgate tool retry|abandon'", "actions", amb)
				}
				return s, nil
			}
			return session.Start(ctx, so)
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

// clientAgent is the agent identity of an MCP client that did not get
// --agent: "mcp:<client name>", escaped and bounded.
func clientAgent(client string) string {
	if client == "" {
		return "mcp-client"
	}
	a := "mcp:" + printable.Escape(client)
	if len(a) > 200 {
		a = a[:200]
	}
	if actor.Check("agent", a) != nil { // e.g. a client name in Cyrillic beside "mcp:"
		return "mcp-client"
	}
	return a
}

// planImplementing plans a run from the contract and moves it to
// IMPLEMENTING; it returns the run id.
func planImplementing(ctx context.Context, g *globals, pf *planFlags) (string, error) {
	c, err := pf.load(g)
	if err != nil {
		return "", err
	}
	if len(c.Tools) == 0 {
		return "", usageErr(fmt.Errorf("%s declares no tools: an agent session needs a tools: section (see examples/agent)", g.contract))
	}
	opts, err := pf.options(ctx, g, c)
	if err != nil {
		return "", err
	}
	opts.Implement = true
	r, err := run.Plan(ctx, opts)
	if err != nil {
		return "", classify(err)
	}
	id := r.ID
	r.Close()
	return id, nil
}

// implementingReport is what 'plan --implement --json' prints.
func implementingReport(g *globals, id string) (*replay.Report, error) {
	rep, err := run.Audit(run.NewStore(g.state).Path(id))
	if err != nil && !app.IsLag(err) {
		return nil, classify(err)
	}
	return rep, nil
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
	rep, err := implementingReport(g, id)
	if err != nil {
		return err
	}
	return writeJSON(g.stdout, rep)
}
