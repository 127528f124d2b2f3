package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/proofgate/proofgate/internal/mcp"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// These tests drive `proofgate mcp` — the binary, built from this package —
// with MCP clients ProofGate did not write: the official Go SDK's client
// here, the MCP inspector's CLI in inspector_test.go. The repository is a
// fresh git repository holding examples/agent.

// buildProofgate builds the CLI into a temporary directory and returns
// the binary's path.
func buildProofgate(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "bin", "proofgate")
	build := exec.Command(gobin, "build", "-o", out, "./cmd/proofgate")
	build.Dir = repoRoot
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building proofgate: %v\n%s", err, b)
	}
	return out
}

// agentRepo makes a git repository holding examples/agent (and a README
// at its root, which the blocked wipe must leave alone) and returns the
// example's directory in it.
func agentRepo(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	dir := filepath.Join(repo, "examples", "agent")
	copyTree(t, "../../examples/agent", dir)
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("root\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCommitAll(t, repo, "agent example")
	return dir
}

// cliEnv is the environment of a proofgate process: no user or system git
// configuration.
func cliEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
}

// cli runs the binary in dir and returns stdout, stderr and the exit code.
func cli(t *testing.T, bin, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, cliEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	}
	t.Fatalf("proofgate %v: %v", args, err)
	return "", "", 0
}

// mustCLI runs the binary and requires exit code want.
func mustCLI(t *testing.T, want int, bin, dir string, args ...string) string {
	t.Helper()
	out, errs, code := cli(t, bin, dir, args...)
	if code != want {
		t.Fatalf("proofgate %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, out, errs)
	}
	return out
}

// syncBuf is a bytes.Buffer a process writes while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mcpClient connects the Go SDK's client to `proofgate mcp ARGS...` in dir.
func mcpClient(t *testing.T, bin, dir string, args ...string) (*sdk.ClientSession, *exec.Cmd, *syncBuf) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Dir, cmd.Env = dir, cliEnv()
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if cmd.Process != nil && cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-test-client", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	return cs, cmd, stderr
}

// call calls a tool and returns the result, its text and its outcome.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, string, mcp.Outcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		tc, ok := c.(*sdk.TextContent)
		if !ok {
			t.Fatalf("tools/call %s: content %T, want text", name, c)
		}
		texts = append(texts, tc.Text)
	}
	var o, last mcp.Outcome
	b, _ := json.Marshal(res.StructuredContent)
	if err := strictjson.Decode(b, &o); err != nil {
		t.Fatalf("tools/call %s: structuredContent %s: %v", name, b, err)
	}
	// The last text block is the serialized structuredContent.
	if len(texts) == 0 || strictjson.Decode([]byte(texts[len(texts)-1]), &last) != nil || !reflect.DeepEqual(last, o) {
		t.Fatalf("tools/call %s: the last text block is not the serialized structuredContent %s: %q", name, b, texts)
	}
	return res, strings.Join(texts[:len(texts)-1], "\n"), o
}

// onlyRun returns the id of the one run in dir's state directory.
func onlyRun(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".proofgate", "runs"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("want one run in %s: %v %v", dir, ents, err)
	}
	return ents[0].Name()
}

// eventTypes returns the types of RUN's events, in order, and the raw log.
func eventTypes(t *testing.T, dir, runID string) ([]string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".proofgate", "runs", runID, "events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct{ Type string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		types = append(types, e.Type)
	}
	return types, string(b)
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func TestMCPGoSDKClient(t *testing.T) {
	bin := buildProofgate(t)
	dir := agentRepo(t)
	cs, cmd, stderr := mcpClient(t, bin, dir, "--agent", "sdk-agent")
	runID := onlyRun(t, dir)

	// serverInfo is `proofgate version`'s.
	info := cs.InitializeResult().ServerInfo
	var ver struct{ Version string }
	if err := json.Unmarshal([]byte(mustCLI(t, 0, bin, dir, "version", "--json")), &ver); err != nil {
		t.Fatal(err)
	}
	if info == nil || info.Name != "proofgate" || info.Version != ver.Version {
		t.Fatalf("serverInfo %+v, want proofgate %s", info, ver.Version)
	}

	checkToolList(t, cs)

	// An allowed call runs and answers with its stdout.
	res, text, o := call(t, cs, "greet", map[string]any{"name": "Ada"})
	if res.IsError || text != "hello Ada\n" || o.Status != "finished" || o.Result != "success" || !strings.HasPrefix(o.Action, "a-") {
		t.Fatalf("greet: isError %v text %q outcome %+v", res.IsError, text, o)
	}

	checkRefusals(t, cs, filepath.Dir(filepath.Dir(dir)))
	checkApproval(t, cs, bin, dir, runID)

	// stdin closes: the session ends, the server exits 0.
	closeServer(t, cs, cmd, stderr)
	checkReceipts(t, bin, dir, runID)
}

func checkToolList(t *testing.T, cs *sdk.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var greet *sdk.Tool
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
		if tl.Name == "greet" {
			greet = tl
		}
	}
	if !slices.Equal(names, []string{"greet", "deploy"}) {
		t.Fatalf("tools/list = %v, want [greet deploy] (wipe is blocked by a rule: not listed)", names)
	}
	b, _ := json.Marshal(greet.InputSchema)
	for _, want := range []string{`"additionalProperties":false`, `"required":["name"]`, `"maxLength":64`, `"pattern":"^[A-Za-z ]+$"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("greet inputSchema lacks %s: %s", want, b)
		}
	}
	if greet.Description != "Print a greeting for someone." {
		t.Errorf("greet description %q", greet.Description)
	}
}

// checkRefusals: what the gate and the params refuse, each with its reason;
// root is the repository root (the tools' working directory).
func checkRefusals(t *testing.T, cs *sdk.ClientSession, root string) {
	t.Helper()
	res, text, o := call(t, cs, "wipe", map[string]any{"path": "README.md"})
	if !res.IsError || text != "blocked by policy rule no-wipe: never delete the tree" || o.Status != "blocked" || o.RuleID != "no-wipe" {
		t.Fatalf("wipe: isError %v text %q outcome %+v", res.IsError, text, o)
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil {
		t.Fatalf("the blocked wipe touched the tree: %v", err)
	}
	// Not in the contract, case variants: decided, blocked by default.
	for _, name := range []string{"launch", "Greet", "GREET"} {
		res, text, o := call(t, cs, name, map[string]any{"name": "Ada"})
		if !res.IsError || o.Status != "blocked" || o.RuleID != "default" || !strings.HasPrefix(text, "blocked by policy rule default") {
			t.Errorf("%q: isError %v text %q outcome %+v, want blocked by the default rule", name, res.IsError, text, o)
		}
	}
	// Unicode confusables (Cyrillic е, a zero-width space), a space: refused
	// before any evidence, as names no contract can declare.
	for _, name := range []string{"gr\u0435et", "greet\u200b", "greet "} {
		res, text, o := call(t, cs, name, map[string]any{"name": "Ada"})
		if !res.IsError || o.Status != mcp.StatusRefused || !strings.Contains(text, "tool call refused: tool") {
			t.Errorf("%q: isError %v text %q outcome %+v, want refused", name, res.IsError, text, o)
		}
	}
	// Arguments the params refuse: shell injection, unknown members, types.
	for _, args := range []any{
		map[string]any{"name": "Ada; touch pwned"},
		map[string]any{"name": "$(touch pwned)"},
		map[string]any{"name": "Ada", "extra": "x"},
		map[string]any{"name": 7},
		map[string]any{},
		[]any{"Ada"},
	} {
		res, text, o := call(t, cs, "greet", args)
		if !res.IsError || o.Status == "finished" {
			t.Errorf("greet %v: isError %v text %q outcome %+v, want refused", args, res.IsError, text, o)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "pwned")); err == nil {
		t.Fatal("an injected command ran")
	}
}

// checkApproval: require-approval before and after a human approves from
// another process; another input is another action; a rejection holds.
func checkApproval(t *testing.T, cs *sdk.ClientSession, bin, dir, runID string) {
	t.Helper()
	res, text, o := call(t, cs, "deploy", map[string]any{"target": "staging"})
	if res.IsError || o.Status != "pending-approval" || text != mcp.PendingText(runID, o.Action) {
		t.Fatalf("deploy: isError %v text %q outcome %+v", res.IsError, text, o)
	}
	action := o.Action
	// Polling before the approval: still waiting, the same action.
	if _, _, o2 := call(t, cs, "deploy", map[string]any{"target": "staging"}); o2.Status != "pending-approval" || o2.Action != action {
		t.Fatalf("deploy polled before approval: %+v, want pending %s", o2, action)
	}
	// The agent's own identity may not approve its calls.
	if _, errs, code := cli(t, bin, dir, "tool", "approve", runID, action, "--actor", "sdk-agent"); code != exitRefused || !strings.Contains(errs, "own agent identity") {
		t.Fatalf("self-approval: exit %d: %s", code, errs)
	}
	mustCLI(t, exitUsage, bin, dir, "tool", "approve", runID, "a-000000000000", "--actor", "alice")
	mustCLI(t, exitOK, bin, dir, "tool", "approve", runID, action, "--actor", "alice")
	mustCLI(t, exitRefused, bin, dir, "tool", "approve", runID, action, "--actor", "bob")

	// Other arguments: a new action, waiting again.
	_, _, o3 := call(t, cs, "deploy", map[string]any{"target": "production"})
	if o3.Status != "pending-approval" || o3.Action == action {
		t.Fatalf("deploy production after approving staging: %+v, want a new pending action", o3)
	}
	// The same arguments: the approved action runs.
	res, text, o = call(t, cs, "deploy", map[string]any{"target": "staging"})
	if res.IsError || text != "deploying to staging\n" || o.Action != action || o.Result != "success" {
		t.Fatalf("deploy after approval: isError %v text %q outcome %+v", res.IsError, text, o)
	}
	// A rejected action stays refused.
	mustCLI(t, exitOK, bin, dir, "tool", "reject", runID, o3.Action, "--actor", "alice", "--reason", "not on a Tuesday")
	res, text, o = call(t, cs, "deploy", map[string]any{"target": "production"})
	if !res.IsError || o.Status == "finished" {
		t.Fatalf("deploy production after rejection: isError %v text %q outcome %+v", res.IsError, text, o)
	}
}

// checkReceipts: the chain verifies and holds the session's events, and
// no raw argument is in the log.
func checkReceipts(t *testing.T, bin, dir, runID string) {
	t.Helper()
	out := mustCLI(t, 0, bin, dir, "events", "verify", runID, "--json")
	if !strings.Contains(out, `"ok": true`) {
		t.Fatalf("events verify: %s", out)
	}
	types, raw := eventTypes(t, dir, runID)
	for typ, min := range map[string]int{
		"session.started": 1, "session.ended": 1, "tool.requested": 5, "tool.decided": 5,
		"tool.started": 2, "tool.finished": 2,
	} {
		if n := count(types, typ); n < min {
			t.Errorf("%d %s events, want at least %d: %v", n, typ, min, types)
		}
	}
	if types[len(types)-1] != "session.ended" {
		t.Errorf("the log ends with %s, want session.ended", types[len(types)-1])
	}
	for _, secret := range []string{"Ada", "staging", "production", "pwned"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the event log holds the raw argument %q", secret)
		}
	}
}

// closeServer closes the client's side (stdin) and requires the server
// to have exited 0 by itself (CommandTransport would SIGTERM it after 30 s).
func closeServer(t *testing.T, cs *sdk.ClientSession, cmd *exec.Cmd, stderr *syncBuf) {
	t.Helper()
	err := cs.Close()
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("proofgate mcp did not exit 0 by itself: %v (%v)\nstderr:\n%s", cmd.ProcessState, err, stderr.String())
	}
}

// TestMCPSignalEndsSession: SIGTERM ends the session cleanly (exit 0,
// session.ended last), and a run given by id is served as it is.
func TestMCPSignalEndsSession(t *testing.T) {
	bin := buildProofgate(t)
	dir := agentRepo(t)
	runID := strings.TrimSpace(mustCLI(t, 0, bin, dir, "plan", "--implement"))
	cs, cmd, stderr := mcpClient(t, bin, dir, runID)
	if res, text, _ := call(t, cs, "greet", map[string]any{"name": "Grace"}); res.IsError || text != "hello Grace\n" {
		t.Fatalf("greet: %v %q", res.IsError, text)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitGone(cmd.Process.Pid, 20*time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v\nstderr:\n%s", err, stderr.String())
	}
	closeServer(t, cs, cmd, stderr)
	types, _ := eventTypes(t, dir, runID)
	if types[len(types)-1] != "session.ended" || count(types, "session.started") != 1 {
		t.Fatalf("events after SIGTERM: %v", types)
	}
	mustCLI(t, 0, bin, dir, "events", "verify", runID)
	// A second server on the same run starts a second session.
	cs2, cmd2, stderr2 := mcpClient(t, bin, dir, runID, "--agent", "second")
	if res, _, _ := call(t, cs2, "greet", map[string]any{"name": "Linus"}); res.IsError {
		t.Fatal("second session: greet refused")
	}
	closeServer(t, cs2, cmd2, stderr2)
	types, _ = eventTypes(t, dir, runID)
	if count(types, "session.started") != 2 || count(types, "session.ended") != 2 {
		t.Fatalf("two sessions: %v", types)
	}
}

// waitGone waits until pid is a zombie or gone (the server exited after a
// signal; its parent has not reaped it yet).
func waitGone(pid int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return nil
		}
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("still running")
}
