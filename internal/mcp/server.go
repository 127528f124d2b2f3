package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/tool"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/input"
)

// Session is what the server needs of a *session.Session.
type Session interface {
	ID() string
	Run() string
	Tools() []contract.Tool
	Call(ctx context.Context, c session.Call) (session.Result, error)
	End(reason string) error
	// Close releases what the process holds for a session it leaves open.
	Close()
}

// Options configure a Server.
type Options struct {
	// Name and Version are the serverInfo the client sees.
	Name, Version string
	// Open returns the session to serve. It is called once, when the
	// client initializes (see the package doc); its error fails that
	// request and is tried again on the next one.
	// client is the name the client gave in initialize ("" when it gave
	// none, or skipped initialize).
	Open func(ctx context.Context, client string) (Session, error)
	// End says whether Run ends the session when the client goes away (a
	// session the server started); false leaves it open (a session that
	// `proofgate session start` started and its own `session end` ends).
	End bool
	// Refused, when set, is why there is no session to serve (a work tree
	// with uncommitted changes refused the run's planning): the server
	// still answers the handshake, so the agent host shows the reason
	// rather than "server failed", lists RefusedTools, and answers every
	// tools/call isError with Refused. Open is never called: no session
	// is opened and nothing is recorded.
	Refused      error
	RefusedTools []contract.Tool
	// Logger receives the server's log (stderr for `proofgate mcp`: stdout
	// carries nothing but MCP frames). Nil discards it.
	Logger *slog.Logger
}

// MaxFrame bounds one inbound JSON-RPC frame: the largest input a call may
// carry (kernel/input) and room for the envelope.
const MaxFrame = input.MaxInput + 64<<10

// Server is an MCP server over one session.
type Server struct {
	o   Options
	srv *sdk.Server
	log *slog.Logger

	mu       sync.Mutex // guards sess, client, closing
	sess     Session
	client   string
	closing  bool
	inflight sync.WaitGroup // calls being served
}

// New returns a server; Run serves it.
func New(o Options) *Server {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{o: o, log: log}
	instructions := "Every tool call passes ProofGate's policy gate and is recorded in the run's hash-chained event log. " +
		"A call that needs a human's approval answers with the action to approve; call again with the same arguments after approval."
	if o.Refused != nil {
		instructions = "ProofGate serves no session: " + o.Refused.Error() + " Every tool call answers with this error until then."
	}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: o.Name, Version: o.Version}, &sdk.ServerOptions{
		Logger:       log,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		Instructions: instructions,
	})
	s.srv.AddReceivingMiddleware(s.middleware)
	return s
}

// Session returns the session served, or nil before the client initialized.
func (s *Server) Session() Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// Run serves the client on t until the transport closes or ctx is done,
// then (Options.End) ends the session. The error is the transport's, or
// the session's refusal to end, joined; a cancelled ctx is a clean end.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	ss, err := s.srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: connect: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	reason := "client disconnected"
	var runErr error
	select {
	case <-ctx.Done():
		// SIGTERM/SIGINT: a clean end, not an error.
		ss.Close()
		<-done
		reason = "interrupted"
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, sdk.ErrConnectionClosed) {
			runErr = err
		}
	}
	return errors.Join(runErr, s.end(reason))
}

// end refuses new calls, waits for the calls in flight to be recorded,
// and ends the session.
func (s *Server) end(reason string) error {
	s.mu.Lock()
	s.closing = true
	sess := s.sess
	s.mu.Unlock()
	s.inflight.Wait()
	if sess == nil {
		return nil
	}
	if !s.o.End {
		sess.Close() // left open (a resumed session): its kept files go
		return nil
	}
	s.log.Info("ending session", "session", sess.ID(), "reason", reason)
	if err := sess.End(reason); err != nil {
		return fmt.Errorf("mcp: end session %s: %w", sess.ID(), err)
	}
	return nil
}

// open opens the session once; the caller holds s.mu.
func (s *Server) open(ctx context.Context) (Session, error) {
	if s.sess != nil {
		return s.sess, nil
	}
	if s.o.Open == nil {
		return nil, errors.New("mcp: no session to serve")
	}
	sess, err := s.o.Open(ctx, s.client)
	if err != nil {
		s.log.Error("cannot open the session", "error", err)
		return nil, err
	}
	s.sess = sess
	s.log.Info("session opened", "run", sess.Run(), "session", sess.ID())
	return sess, nil
}

// middleware answers initialize/discover (after opening the session),
// tools/list and tools/call itself; everything else goes to the SDK.
func (s *Server) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if err := undeclared(method); err != nil {
			return nil, err
		}
		if s.o.Refused != nil {
			return s.refusedMethod(ctx, method, req, next)
		}
		switch method {
		case "initialize", "server/discover":
			// Open first: a session that cannot open fails the handshake
			// before the SDK records the client as initialized.
			s.mu.Lock()
			if s.client == "" {
				s.client = clientName(req)
			}
			_, err := s.open(ctx)
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return next(ctx, method, req)
		case "tools/list":
			return s.listTools(ctx)
		case "tools/call":
			r, ok := req.(*sdk.CallToolRequest)
			if !ok || r.Params == nil {
				return nil, errors.New("mcp: tools/call without params")
			}
			return s.callTool(ctx, r.Params)
		}
		return next(ctx, method, req)
	}
}

// undeclared refuses, as JSON-RPC "method not found", a request of a
// capability the server does not declare (it declares tools only): the
// SDK would otherwise answer resources/list and prompts/list with empty
// lists, as if they were served.
func undeclared(method string) error {
	for _, prefix := range []string{"resources/", "prompts/", "completion/", "logging/"} {
		if strings.HasPrefix(method, prefix) {
			return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: fmt.Sprintf("%s: this server declares the tools capability only", method)}
		}
	}
	return nil
}

// refusedMethod serves a client when there is no session (Options.Refused):
// the handshake and tools/list as usual, every tools/call the refusal.
func (s *Server) refusedMethod(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	switch method {
	case "tools/list":
		return listing(s.o.RefusedTools), nil
	case "tools/call":
		if r, ok := req.(*sdk.CallToolRequest); ok && r.Params != nil {
			s.log.Info("tools/call refused: no session", "tool", printable.Escape(r.Params.Name))
		}
		return refusal(s.o.Refused), nil
	}
	return next(ctx, method, req)
}

func (s *Server) locked(ctx context.Context) (Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open(ctx)
}

func (s *Server) listTools(ctx context.Context) (*sdk.ListToolsResult, error) {
	sess, err := s.locked(ctx)
	if err != nil {
		return nil, err
	}
	return listing(sess.Tools()), nil
}

// listing is the tools/list result for tools.
func listing(tools []contract.Tool) *sdk.ListToolsResult {
	res := &sdk.ListToolsResult{Tools: []*sdk.Tool{}}
	for _, t := range tools {
		res.Tools = append(res.Tools, &sdk.Tool{Name: t.Name, Description: t.Description,
			InputSchema: tool.InputSchema(t), OutputSchema: OutcomeSchema()})
	}
	return res
}

// callTool passes one call to the session. Calls run concurrently (the
// session records each under the run's lock and runs tools without it).
func (s *Server) callTool(ctx context.Context, p *sdk.CallToolParamsRaw) (*sdk.CallToolResult, error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return refusal(errors.New("the session is ending")), nil
	}
	sess, err := s.open(ctx)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	c := session.Call{Tool: p.Name, Args: arguments(p.Arguments)}
	c.TraceParent, c.TraceState = metaString(p.Meta, "traceparent"), metaString(p.Meta, "tracestate")
	s.log.Info("tools/call", "tool", printable.Escape(p.Name))
	res, err := sess.Call(ctx, c)
	if err != nil {
		s.log.Info("call refused", "tool", printable.Escape(p.Name), "error", err)
		return refusal(err), nil
	}
	s.log.Info("call answered", "tool", printable.Escape(p.Name), "action", res.Action, "status", string(res.Status), "result", res.Result)
	return toResult(sess.Run(), res), nil
}

// arguments is the call's arguments object: absent or null is {}.
func arguments(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}")
	}
	return raw
}

// clientName is the client's name from initialize's clientInfo, or from
// the clientInfo _meta member of a stateless (server/discover) request.
func clientName(req sdk.Request) string {
	if r, ok := req.(*sdk.InitializeRequest); ok {
		if r.Params != nil && r.Params.ClientInfo != nil {
			return r.Params.ClientInfo.Name
		}
		return ""
	}
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() {
		return ""
	}
	switch v := p.GetMeta()[sdk.MetaKeyClientInfo].(type) {
	case *sdk.Implementation:
		return v.Name
	case map[string]any:
		name, _ := v["name"].(string)
		return name
	}
	return ""
}

func metaString(m sdk.Meta, key string) string {
	if v, ok := m[key].(string); ok {
		return v
	}
	return ""
}
