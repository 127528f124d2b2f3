package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A client that writes all its requests and closes stdin at once (printf
// '...' | proofgate mcp) gets an answer to each, and its call runs and is
// recorded: the end of stdin ends the session only after what was
// received is answered.
func TestMCPAnswersRequestsSentBeforeStdinCloses(t *testing.T) {
	bin := buildProofgate(t)
	dir := agentRepo(t)
	frames := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"printf","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--agent", "printf-agent")
	cmd.Dir, cmd.Env = dir, cliEnv()
	cmd.Stdin = strings.NewReader(frames) // closed as soon as it is written
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("proofgate mcp: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	got := map[float64]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		if id, ok := m["id"].(float64); ok {
			got[id] = m
		}
	}
	for _, id := range []float64{1, 2, 3} {
		if got[id] == nil || got[id]["result"] == nil {
			t.Fatalf("no result for request %v\nstdout:\n%s\nstderr:\n%s", id, out.String(), errb.String())
		}
	}
	if b, _ := json.Marshal(got[2]["result"]); !strings.Contains(string(b), "hello Ada") {
		t.Fatalf("tools/call answered %s, want the greeting", b)
	}
	types, raw := eventTypes(t, dir, onlyRun(t, dir))
	for ty, n := range map[string]int{"tool.started": 1, "tool.finished": 1, "session.ended": 1} {
		if count(types, ty) != n {
			t.Fatalf("%d %s events, want %d:\n%s", count(types, ty), ty, n, raw)
		}
	}
}
