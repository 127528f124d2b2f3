package app

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

const agentYAML = `version: 1
name: agent
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: unit, run: ['true']}
approval: {required: 1}
tools:
  - name: greet
    run: [/bin/echo, hello, "{{name}}"]
    params:
      name: {type: string, required: true, max_length: 64, pattern: "^[A-Za-z ]+$"}
  - name: wipe
    run: [/bin/rm, -rf, --, "{{path}}"]
    params:
      path: {type: path, required: true}
  - name: deploy
    run: [/bin/echo, deploying to, "{{target}}"]
    params:
      target: {type: string, required: true, enum: [staging, production]}
policy:
  - {id: no-wipe, tool: wipe, effect: block, reason: never delete the tree}
  - {id: greet-anyone, tool: greet, effect: allow}
  - {id: deploy-needs-a-human, tool: deploy, effect: require-approval}
`

// implementing makes a git repository (its state directory ignored) and
// plans an IMPLEMENTING run of the contract y there with PlanImplementing;
// it returns the repository, the state directory and the run id.
func implementing(t *testing.T, y string) (repo, state, id string, err error) {
	t.Helper()
	repo = t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".proofgate/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	c, err := contract.Parse("contract.yaml", []byte(y), "")
	if err != nil {
		t.Fatal(err)
	}
	state = filepath.Join(repo, ".proofgate")
	id, err = PlanImplementing(context.Background(), ImplementOptions{Contract: c, File: "contract.yaml", Plan: func() (run.PlanOptions, error) {
		return run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: "test"}, nil
	}})
	return repo, state, id, err
}

// calls makes calls in the run with PlanImplementing planned, as
// 'tool exec' does.
type calls struct {
	t                *testing.T
	repo, state, run string
	rts              *ToolRuntimes
}

func newCalls(t *testing.T) *calls {
	repo, state, id, err := implementing(t, agentYAML)
	if err != nil {
		t.Fatal(err)
	}
	rts := NewToolRuntimes(context.Background())
	t.Cleanup(rts.Close)
	return &calls{t: t, repo: repo, state: state, run: id, rts: rts}
}

func (c *calls) options(sess, agent string) SessionOptions {
	return SessionOptions{State: c.state, Run: c.run, RepoDir: c.repo, Agent: agent, Session: sess, Runtimes: c.rts}
}

func (c *calls) call(sess, tool, args string) (*Called, error) {
	return CallTool(context.Background(), CallOptions{SessionOptions: c.options(sess, "shell"), Call: session.Call{Tool: tool, Args: []byte(args)}})
}

func (c *calls) decide(call, decision string) (string, error) {
	return DecideCall(DecideOptions{State: c.state, Run: "latest", RepoDir: c.repo, Call: call, Decision: decision, Actor: "alice", Runtimes: c.rts})
}

// An implementation run is planned only of a contract with tools, and is
// IMPLEMENTING; its visible tools are the ones some rule allows.
func TestPlanImplementingAndListTools(t *testing.T) {
	if _, _, _, err := implementing(t, contractYAML); !errors.As(err, new(*NoToolsError)) || class(err) != exit.Usage ||
		err.Error() != "contract.yaml declares no tools: an agent session needs a tools: section (see examples/agent)" {
		t.Fatalf("a contract without tools: %v (class %v)", err, class(err))
	}
	_, state, id, err := implementing(t, agentYAML)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := AuditRun(state, id)
	if err != nil || rep.State != replay.Implementing {
		t.Fatalf("AuditRun = %+v, %v", rep, err)
	}
	rows, err := ListTools(state, "latest")
	if err != nil || len(rows) != 2 || rows[0].Name != "greet" || rows[0].RuleID != "greet-anyone" || rows[1].Name != "deploy" ||
		rows[1].RuleID != "deploy-needs-a-human" || rows[0].Runtime != "process" || rows[0].InputSchema == nil {
		t.Fatalf("ListTools = %+v, %v", rows, err)
	}
	if _, err := ListTools(state, "nope"); err == nil || class(err) != exit.Usage {
		t.Fatalf("an unknown run: %v (class %v)", err, class(err))
	}
}

// A call in a session of its own ends it, unless the call waits for
// approval; a human decides the held call.
func TestCallToolAndDecideCall(t *testing.T) {
	c := newCalls(t)
	got, err := c.call("", "greet", `{"name":"Ada"}`)
	if err != nil || got.SessionOpen || got.Run != c.run || got.Result.Status != session.Finished || got.Result.Result != "success" ||
		string(got.Result.Stdout) != "hello Ada\n" {
		t.Fatalf("greet = %+v, %v", got, err)
	}
	if got, err := c.call("", "wipe", `{"path":"x"}`); err != nil || got.SessionOpen || got.Result.Status != session.Blocked {
		t.Fatalf("wipe = %+v, %v", got, err)
	}
	if _, err := c.call("", "greet", `{"name":"Ada; rm"}`); err == nil || class(err) != exit.Usage {
		t.Fatalf("arguments the params refuse: %v (class %v)", err, class(err))
	}
	held, err := c.call("", "deploy", `{"target":"staging"}`)
	if err != nil || !held.SessionOpen || held.Result.Status != session.PendingApproval || held.Result.Action == "" {
		t.Fatalf("deploy = %+v, %v", held, err)
	}
	if _, err := c.decide("a-000000000000", replay.DecisionApprove); err == nil || class(err) != exit.Usage {
		t.Fatalf("an unknown call: %v (class %v)", err, class(err))
	}
	if id, err := c.decide(held.Result.Action, replay.DecisionApprove); err != nil || id != c.run {
		t.Fatalf("approve = %q, %v", id, err)
	}
	if _, err := c.decide(held.Result.Action, replay.DecisionRetry); err == nil || class(err) != exit.Refused {
		t.Fatalf("retry of a call that is not ambiguous: %v (class %v)", err, class(err))
	}
	// the same call in that session runs in the agent's next process
	// ('tool exec --session', TestScripts' agent_tools): this one is the
	// session's live owner, which no process takes over
	if _, err := c.call(held.Session, "deploy", `{"target":"staging"}`); !errors.As(err, new(*session.LiveSessionError)) {
		t.Fatalf("the held call's session taken over from its live owner: %v", err)
	}
}

// A session this process owns is not taken over: its owner is alive.
func TestOpenSession(t *testing.T) {
	c := newCalls(t)
	s, err := OpenSession(context.Background(), c.options("", "shell"))
	if err != nil || len(s.Ambiguous) != 0 || s.Ambiguous == nil || !strings.HasPrefix(s.ID(), "s-") {
		t.Fatalf("OpenSession = %+v, %v", s, err)
	}
	if _, err := OpenSession(context.Background(), c.options(s.ID(), "")); !errors.As(err, new(*session.LiveSessionError)) || class(err) != exit.Refused {
		t.Fatalf("a live session taken over: %v (class %v)", err, class(err))
	}
	if _, err := OpenSession(context.Background(), c.options("s-000000000000", "")); err == nil || class(err) != exit.Usage {
		t.Fatalf("an unknown session: %v (class %v)", err, class(err))
	}
	if err := s.End("done"); err != nil {
		t.Fatal(err)
	}
}

// A tool's runtime is connected when a call needs it: without a daemon,
// a docker tool's call fails with the fix; an unknown runtime is refused.
func TestToolRuntimes(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	rts := NewToolRuntimes(context.Background())
	defer rts.Close()
	if p, err := rts.get("process"); p == nil || err != nil {
		t.Fatalf("process: %v, %v", p, err)
	}
	if _, err := rts.get("docker"); err == nil || !strings.HasPrefix(err.Error(), "the tool runs in Docker, but ") {
		t.Fatalf("docker without a daemon: %v", err)
	}
	if _, err := rts.get("vm"); err == nil || err.Error() != `unknown runtime "vm"` {
		t.Fatalf("an unknown runtime: %v", err)
	}
}

// TestClientAgentIsAValidActor: the agent identity an MCP client's name
// becomes always passes actor.Check (session start refuses one that does
// not), falling back to "mcp-client" for a name in Cyrillic or Greek
// beside the Latin "mcp:" prefix, or holding an invisible character.
func TestClientAgentIsAValidActor(t *testing.T) {
	for client, want := range map[string]string{
		"claude-code": "mcp:claude-code", "": "mcp-client", "Клиент": "mcp-client", "Πελάτης": "mcp-client",
		"x\u00a0y": "mcp-client", "a\u3164": "mcp-client",
	} {
		got := ClientAgent(client)
		if got != want || actor.Check("agent", got) != nil {
			t.Errorf("ClientAgent(%q) = %q, want %q (check: %v)", client, got, want, actor.Check("agent", got))
		}
	}
}

// A held call of an open session is a pending approval in the status
// document.
func TestNewStatusDoc(t *testing.T) {
	c := newCalls(t)
	held, err := c.call("", "deploy", `{"target":"staging"}`)
	if err != nil {
		t.Fatal(err)
	}
	inspect := func() StatusDoc {
		st, err := run.Inspect(context.Background(), c.state, c.run, run.Freshness{RepoDir: c.repo, StateDir: c.state})
		if err != nil {
			t.Fatal(err)
		}
		return NewStatusDoc(st)
	}
	want := WaitingCall{Session: held.Session, Call: held.Result.Action, Tool: "deploy", InputHash: held.Result.InputHash}
	if d := inspect(); len(d.PendingApprovals) != 1 || d.PendingApprovals[0] != want || d.Ambiguous != nil {
		t.Fatalf("a held call: %+v, %+v", d.PendingApprovals, d.Ambiguous)
	}
}
