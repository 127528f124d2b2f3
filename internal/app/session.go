package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// SessionOptions say which run an agent session records into, from which
// repository, which session and where its tools run.
type SessionOptions struct {
	// State is the state directory; Run a run id or "latest".
	State, Run string
	// RepoDir is the repository the tools run in.
	RepoDir string
	// Agent is the identity a new session records in session.started.
	Agent string
	// Session is the open session to take over ("" starts one).
	Session string
	// Runtimes are the runtimes the session's tools run in.
	Runtimes *ToolRuntimes
}

// AgentSession is an open agent session.
type AgentSession struct {
	*session.Session
	// Ambiguous are, for a session taken over, its calls that started and
	// never finished, for a human to decide (retry or abandon).
	Ambiguous []string
}

// OpenSession starts a session on the IMPLEMENTING run o.Run, or, with
// o.Session, takes that session over from its dead recorder
// (session.Resume). The session's errors are returned as they are, for
// the caller to classify.
func OpenSession(ctx context.Context, o SessionOptions) (*AgentSession, error) {
	if o.Session == "" {
		s, err := session.Start(ctx, o.options())
		if err != nil {
			return nil, err
		}
		return &AgentSession{Session: s, Ambiguous: []string{}}, nil
	}
	s, amb, err := session.Resume(ctx, o.options(), o.Session)
	if err != nil {
		return nil, err
	}
	if amb == nil {
		amb = []string{}
	}
	return &AgentSession{Session: s, Ambiguous: amb}, nil
}

// options are the recorder's options of o.
func (o SessionOptions) options() session.Options {
	return session.Options{StateDir: o.State, Run: o.Run, RepoDir: o.RepoDir, Agent: o.Agent, Runtime: o.Runtimes.get}
}

// ClientAgent is the agent identity of an MCP client that was given no
// other: "mcp:<client name>", escaped and bounded, or "mcp-client" when
// the client has no name or that would not be a valid actor.
func ClientAgent(client string) string {
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

// ToolRuntimes connect a tool's runtime the first time a call needs it: a
// contract whose tools are all processes never needs a Docker daemon, and
// a missing daemon fails the calls that need it alone. (Connect opens the
// runtimes of a contract's checks before a run; a session learns its
// tools from the run's frozen contract only once it opens.)
type ToolRuntimes struct {
	ctx    context.Context
	mu     sync.Mutex
	docker *docker.Runtime
}

// NewToolRuntimes are runtimes that connect with ctx: the context of the
// whole command or server, which outlives each call.
func NewToolRuntimes(ctx context.Context) *ToolRuntimes { return &ToolRuntimes{ctx: ctx} }

func (r *ToolRuntimes) get(kind string) (runtime.Runtime, error) {
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

// Close releases the Docker client, if one was opened.
func (r *ToolRuntimes) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.docker != nil {
		r.docker.Close()
	}
}
