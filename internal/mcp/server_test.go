package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/proofgate/proofgate/internal/mcp"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// These tests serve a real internal/session (a git repository, a planned
// IMPLEMENTING run, process tools) to the Go SDK's client over the SDK's
// in-memory transport: the server's lifecycle and its mapping of session
// results. cmd/proofgate's tests drive the binary over stdio.

const contractYAML = `version: 1
name: mcp-test
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: unit, run: [/bin/true]}
approval: {required: 1}
tools:
  - name: greet
    description: Print a greeting.
    run: [/bin/echo, hello, "{{name}}"]
    params:
      name: {type: string, required: true, max_length: 64, pattern: "^[A-Za-z ]+$"}
  - name: wipe
    run: [/bin/rm, -rf, --, "{{path}}"]
    params:
      path: {type: path, required: true}
  - name: deploy
    run: [/bin/echo, deploying, "{{target}}"]
    params:
      target: {type: string, required: true, enum: [staging, production]}
  - name: fail
    run: [/bin/sh, -c, "echo out; echo err >&2; exit 3"]
  - name: env
    run: [/usr/bin/env]
  - name: stall
    run: [/bin/sleep, "30"]
    timeout: 1s
  - name: await
    run: [/bin/sh, -c, 'until [ -f "$0" ]; do /bin/sleep 0.05; done; echo seen', "{{flag}}"]
    params:
      flag: {type: string, required: true}
  - name: touch
    run: [/usr/bin/touch, "{{flag}}"]
    params:
      flag: {type: string, required: true}
policy:
  - {id: no-wipe, tool: wipe, effect: block, reason: never delete the tree}
  - {tool: greet, effect: allow}
  - {tool: deploy, effect: require-approval}
  - {tool: fail, effect: allow}
  - {tool: env, effect: allow}
  - {tool: await, effect: allow}
  - {tool: stall, effect: allow}
  - {tool: touch, effect: allow}
`

type fixture struct {
	repo, state, run string
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// newFixture plans a run of contractYAML in a fresh repository;
// implement says whether it enters IMPLEMENTING.
func newFixture(t *testing.T, implement bool) *fixture {
	t.Helper()
	repo := t.TempDir()
	for name, body := range map[string]string{
		".gitignore": ".proofgate/runs/\n", "README.md": "hi\n", ".proofgate/contract.yaml": contractYAML,
	} {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "init", "-q", ".")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	c, err := contract.Load(filepath.Join(repo, ".proofgate", "contract.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{repo: repo, state: filepath.Join(repo, ".proofgate")}
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: repo, StateDir: f.state, Contract: c, Origin: "file:.proofgate/contract.yaml", Implement: implement})
	if err != nil {
		t.Fatal(err)
	}
	f.run = r.ID
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) options(agent string) session.Options {
	return session.Options{StateDir: f.state, Run: f.run, RepoDir: f.repo, Agent: agent, LockWait: 5 * time.Second,
		Runtime: func(kind string) (runtime.Runtime, error) { return process.New(), nil }}
}

func (f *fixture) types(t *testing.T) []string {
	t.Helper()
	ev, err := run.ReadLog(run.NewStore(f.state).Path(f.run))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ev {
		out = append(out, e.Type)
	}
	return out
}

func (f *fixture) events(t *testing.T) []eventlog.Event {
	t.Helper()
	ev, err := run.ReadLog(run.NewStore(f.state).Path(f.run))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func has(types []string, typ string) int {
	n := 0
	for _, x := range types {
		if x == typ {
			n++
		}
	}
	return n
}

// serve runs a server over in-memory transports and connects the SDK's
// client; stop closes the client and returns Run's error.
func serve(t *testing.T, o mcp.Options) (cs *sdk.ClientSession, stop func() error, connErr error) {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	srv := mcp.New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	client := sdk.NewClient(&sdk.Implementation{Name: "unit-client", Version: "0"}, nil)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	cs, connErr = client.Connect(cctx, ct, nil)
	stop = func() error {
		defer cancel()
		if cs != nil {
			cs.Close()
		}
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("server did not stop")
			return nil
		}
	}
	t.Cleanup(func() { cancel() })
	return cs, stop, connErr
}

func startOpen(f *fixture, agent string) func(context.Context, string) (mcp.Session, error) {
	return func(ctx context.Context, client string) (mcp.Session, error) {
		o := f.options(agent)
		if agent == "" {
			o.Agent = "mcp:" + client
		}
		return session.Start(ctx, o)
	}
}

func callTool(t *testing.T, cs *sdk.ClientSession, p *sdk.CallToolParams) (*sdk.CallToolResult, string, mcp.Outcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", p.Name, err)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.(*sdk.TextContent).Text)
	}
	o := structured(t, res.StructuredContent, texts)
	return res, strings.Join(texts[:len(texts)-1], "\n"), o
}

// structured checks that content's last text block is the serialization
// of the structuredContent sc and that sc conforms to OutcomeSchema (the
// tools' outputSchema), and returns it.
func structured(t *testing.T, sc any, texts []string) mcp.Outcome {
	t.Helper()
	b, _ := json.Marshal(sc)
	var o, last mcp.Outcome
	if err := strictjson.Decode(b, &o); err != nil {
		t.Fatal(err)
	}
	if len(texts) == 0 || strictjson.Decode([]byte(texts[len(texts)-1]), &last) != nil || !reflect.DeepEqual(o, last) {
		t.Fatalf("the last text block is not the serialized structuredContent %s: %q", b, texts)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t, "outcome", mcp.OutcomeSchema()).Validate(v); err != nil {
		t.Fatalf("structuredContent %s does not conform to the outputSchema: %v", b, err)
	}
	return o
}

// The session opens when the client initializes (not before), with the
// client's name as the agent when none is given, and ends when the client
// goes away.
func TestLifecycle(t *testing.T) {
	f := newFixture(t, true)
	if n := has(f.types(t), "session.started"); n != 0 {
		t.Fatalf("a session before any client: %v", f.types(t))
	}
	cs, stop, err := serve(t, mcp.Options{Name: "proofgate", Version: "9.9.9", End: true, Open: startOpen(f, "")})
	if err != nil {
		t.Fatal(err)
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "proofgate" || info.Version != "9.9.9" {
		t.Fatalf("serverInfo %+v", info)
	}
	if n := has(f.types(t), "session.started"); n != 1 {
		t.Fatalf("after initialize: %v", f.types(t))
	}
	if !strings.Contains(string(mustJSON(t, f.events(t))), `"agent":"mcp:unit-client"`) {
		t.Error("the agent identity is not the client's name")
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	types := f.types(t)
	if types[len(types)-1] != "session.ended" {
		t.Fatalf("after the client left: %v", types)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A run that is not IMPLEMENTING: initialize fails with the session's
// refusal, and nothing is recorded.
func TestOpenRefused(t *testing.T) {
	f := newFixture(t, false)
	before := f.types(t)
	_, stop, err := serve(t, mcp.Options{Name: "proofgate", Version: "1", End: true, Open: startOpen(f, "a")})
	if err == nil || !strings.Contains(err.Error(), "not IMPLEMENTING") {
		t.Fatalf("connect: %v, want the NotImplementingError", err)
	}
	stop()
	if after := f.types(t); len(after) != len(before) {
		t.Fatalf("a refused open recorded %v", after[len(before):])
	}
}

// End false (a session that `session start` opened) leaves it open, and
// the server's process leaves none of its kept files (the lock's owner
// file, the tools' record slots, blob files made ahead: Session.Close).
func TestJoinLeavesSessionOpen(t *testing.T) {
	f := newFixture(t, true)
	cs, stop, err := serve(t, mcp.Options{Name: "p", Version: "1", End: false, Open: startOpen(f, "a")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, o := callTool(t, cs, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}}); o.Result != "success" {
		t.Fatalf("greet: %+v", o)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if has(f.types(t), "session.ended") != 0 {
		t.Fatal("a joined session was ended")
	}
	var kept []string
	filepath.WalkDir(run.NewStore(f.state).Path(f.run), func(p string, d fs.DirEntry, err error) error {
		if n := d.Name(); strings.HasPrefix(n, ".slot-") || strings.HasPrefix(n, ".tmp-") || strings.HasPrefix(n, "events.lock") {
			kept = append(kept, n)
		}
		return nil
	})
	if len(kept) != 0 {
		t.Fatalf("the server left %v", kept)
	}
}

// What each session result becomes, and what is refused before evidence.
func TestCallResults(t *testing.T) {
	f := newFixture(t, true)
	cs, stop, err := serve(t, mcp.Options{Name: "p", Version: "1", End: true, Open: startOpen(f, "agent")})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	res, text, o := callTool(t, cs, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if res.IsError || text != "hello Ada\n" || o.Result != "success" || o.ExitCode == nil || *o.ExitCode != 0 || !strings.HasPrefix(o.OutputHash, "sha256:") {
		t.Fatalf("greet: %v %q %+v", res.IsError, text, o)
	}
	res, text, o = callTool(t, cs, &sdk.CallToolParams{Name: "fail"})
	if !res.IsError || o.Result != "failure" || *o.ExitCode != 3 || text != "out\n\nresult failure, exit code 3\nstderr:\nerr\n" {
		t.Fatalf("fail: %v %q %+v", res.IsError, text, o)
	}
	res, text, o = callTool(t, cs, &sdk.CallToolParams{Name: "stall"})
	if !res.IsError || o.Outcome != "timeout" || !strings.Contains(text, "result failure (timeout), exit code") {
		t.Fatalf("stall: %v %q %+v", res.IsError, text, o)
	}
	res, text, o = callTool(t, cs, &sdk.CallToolParams{Name: "wipe", Arguments: map[string]any{"path": "README.md"}})
	if !res.IsError || text != "blocked by policy rule no-wipe: never delete the tree" || o.Status != "blocked" {
		t.Fatalf("wipe: %v %q %+v", res.IsError, text, o)
	}
	if _, err := os.Stat(filepath.Join(f.repo, "README.md")); err != nil {
		t.Fatal("the blocked wipe ran")
	}
	res, text, o = callTool(t, cs, &sdk.CallToolParams{Name: "deploy", Arguments: map[string]any{"target": "staging"}})
	if res.IsError || o.Status != "pending-approval" || text != mcp.PendingText(f.run, o.Action) {
		t.Fatalf("deploy: %v %q %+v", res.IsError, text, o)
	}
	// Unknown and case variants are decided (blocked by default, recorded);
	// names that cannot be recorded are refused before any evidence.
	for _, name := range []string{"launch", "Greet"} {
		res, text, o = callTool(t, cs, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"name": "Ada"}})
		if !res.IsError || o.RuleID != "default" || !strings.HasPrefix(text, "blocked by policy rule default: ") {
			t.Errorf("%s: %v %q %+v", name, res.IsError, text, o)
		}
	}
	for _, name := range []string{"gr\u0435et", "greet\u200b", "", "greet;rm"} {
		res, text, o = callTool(t, cs, &sdk.CallToolParams{Name: name})
		if !res.IsError || o.Status != mcp.StatusRefused || !strings.Contains(text, "tool call refused: tool") {
			t.Errorf("%q: %v %q %+v", name, res.IsError, text, o)
		}
	}
	checkTrace(t, f, cs)
}

// checkTrace: a traceparent in _meta reaches the tool (TRACEPARENT, a
// child span) and the receipt; an invalid one is refused.
func checkTrace(t *testing.T, f *fixture, cs *sdk.ClientSession) {
	t.Helper()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, text, _ := callTool(t, cs, &sdk.CallToolParams{Name: "env", Meta: sdk.Meta{"traceparent": tp}})
	if res.IsError || !strings.Contains(text, "TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-") || strings.Contains(text, "00f067aa0ba902b7") {
		t.Fatalf("env with a traceparent: %v %q", res.IsError, text)
	}
	if !strings.Contains(string(mustJSON(t, f.events(t))), `"parent_span_id":"00f067aa0ba902b7"`) {
		t.Error("the receipt does not record the parent span")
	}
	res, text, _ = callTool(t, cs, &sdk.CallToolParams{Name: "env", Meta: sdk.Meta{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}})
	if !res.IsError || !strings.Contains(text, "traceparent") {
		t.Fatalf("an all-zero trace id: %v %q", res.IsError, text)
	}
}

// A call whose tool waits does not hold up the next call: await returns
// only once touch (called after it) ran. Served one at a time, await
// would reach its timeout instead.
func TestConcurrentCalls(t *testing.T) {
	f := newFixture(t, true)
	cs, stop, err := serve(t, mcp.Options{Name: "p", Version: "1", End: true, Open: startOpen(f, "agent")})
	if err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(t.TempDir(), "flag")
	type answer struct {
		text string
		o    mcp.Outcome
	}
	got := make(chan answer, 1)
	go func() {
		_, text, o := callTool(t, cs, &sdk.CallToolParams{Name: "await", Arguments: map[string]any{"flag": flag}})
		got <- answer{text, o}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// touch only once await started (its receipt is in the log).
		if has(f.types(t), "tool.started") == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res, _, o := callTool(t, cs, &sdk.CallToolParams{Name: "touch", Arguments: map[string]any{"flag": flag}}); res.IsError {
		t.Fatalf("touch: %+v", o)
	}
	select {
	case a := <-got:
		if a.text != "seen\n" || a.o.Result != "success" {
			t.Fatalf("await: %q %+v", a.text, a.o)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("await did not return after touch ran")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	types := f.types(t)
	if has(types, "tool.finished") != 2 || types[len(types)-1] != "session.ended" {
		t.Fatalf("events: %v", types)
	}
}

// tools/list: the tools some rule could allow, in contract order, each
// with a schema that a JSON Schema implementation ProofGate did not write
// compiles and that accepts and refuses what the params say.
func TestToolsListSchemas(t *testing.T) {
	f := newFixture(t, true)
	cs, stop, err := serve(t, mcp.Options{Name: "p", Version: "1", End: true, Open: startOpen(f, "agent")})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		schemas[tl.Name] = compileSchema(t, tl.Name, tl.InputSchema)
		if !reflect.DeepEqual(mustJSON(t, tl.OutputSchema), mustJSON(t, mcp.OutcomeSchema())) {
			t.Errorf("%s: outputSchema %s, want the Outcome schema", tl.Name, mustJSON(t, tl.OutputSchema))
		}
	}
	if strings.Join(names, " ") != "greet deploy fail env stall await touch" {
		t.Fatalf("tools/list = %v (wipe is blocked by a rule: never listed)", names)
	}
	for _, c := range []struct {
		tool, instance string
		ok             bool
	}{
		{"greet", `{"name":"Ada"}`, true},
		{"greet", `{}`, false},
		{"greet", `{"name":"Ada","extra":1}`, false},
		{"greet", `{"name":"Ada; rm -rf /"}`, false},
		{"greet", `{"name":"` + strings.Repeat("A", 65) + `"}`, false},
		{"greet", `{"name":7}`, false},
		{"greet", `[]`, false},
		{"deploy", `{"target":"staging"}`, true},
		{"deploy", `{"target":"Staging"}`, false},
		{"fail", `{}`, true},
		{"fail", `{"x":1}`, false},
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(c.instance))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[c.tool].Validate(v); (err == nil) != c.ok {
			t.Errorf("%s %s: valid %v, want %v (%v)", c.tool, c.instance, err == nil, c.ok, err)
		}
	}
}

func compileSchema(t *testing.T, name string, s any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://"+name+".json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://" + name + ".json")
	if err != nil {
		t.Fatalf("%s: the listed schema does not compile: %v\n%s", name, err, b)
	}
	return sch
}

// Refused (a work tree planning refused): the handshake and tools/list
// answer, every tools/call answers isError with the refusal, Open is never
// called and nothing is recorded.
func TestRefusedAnswersHandshake(t *testing.T) {
	f := newFixture(t, true)
	before := f.types(t)
	opened := false
	open := func(context.Context, string) (mcp.Session, error) { opened = true; return nil, errors.New("opened") }
	tools := []contract.Tool{{Name: "greet", Description: "say hello"}}
	cs, stop, err := serve(t, mcp.Options{Name: "proofgate", Version: "1", End: true, Open: open,
		Refused: errors.New("work tree has uncommitted changes (notes.txt)"), RefusedTools: tools})
	if err != nil {
		t.Fatalf("connect: %v, want the handshake answered", err)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "uncommitted changes (notes.txt)") {
		t.Errorf("instructions %q", ins)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "greet" {
		t.Fatalf("tools/list: %+v %v", lt, err)
	}
	res, text, o := callTool(t, cs, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if !res.IsError || o.Status != mcp.StatusRefused || !strings.Contains(text, "notes.txt") {
		t.Fatalf("call: isError %v outcome %+v text %q", res.IsError, o, text)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if opened {
		t.Error("Open was called on a refused server")
	}
	if after := f.types(t); len(after) != len(before) {
		t.Fatalf("a refused server recorded %v", after[len(before):])
	}
}

// Capabilities the server does not declare (it declares tools only) are
// refused as JSON-RPC "method not found", not answered with empty lists;
// with and without a session.
func TestUndeclaredCapabilities(t *testing.T) {
	f := newFixture(t, true)
	for name, o := range map[string]mcp.Options{
		"session": {Name: "p", Version: "1", End: true, Open: startOpen(f, "agent")},
		"refused": {Name: "p", Version: "1", Refused: errors.New("the work tree has uncommitted changes")},
	} {
		t.Run(name, func(t *testing.T) {
			cs, stop, err := serve(t, o)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if caps := cs.InitializeResult().Capabilities; caps.Resources != nil || caps.Prompts != nil || caps.Tools == nil {
				t.Fatalf("capabilities %+v", caps)
			}
			_, errR := cs.ListResources(ctx, nil)
			_, errP := cs.ListPrompts(ctx, nil)
			_, errT := cs.ListResourceTemplates(ctx, nil)
			for _, err := range []error{errR, errP, errT} {
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound {
					t.Errorf("got %v, want method not found", err)
				}
			}
		})
	}
}
