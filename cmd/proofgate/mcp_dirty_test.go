package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMCPDirtyTreeAnswersHandshake: `proofgate mcp` on a work tree with
// uncommitted changes answers the MCP handshake (an agent host then shows
// why, not "server failed"), lists the contract's tools, answers every
// tools/call isError naming the dirty path and the fix, plans no run and
// records nothing, and exits 2 when the client goes away.
func TestMCPDirtyTreeAnswersHandshake(t *testing.T) {
	bin := buildProofgate(t)
	dir := agentRepo(t)
	if err := os.WriteFile(filepath.Join(dir, "notes-uncommitted.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, cmd, stderr := mcpClient(t, bin, dir, "--agent", "sdk-agent")
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "uncommitted changes") {
		t.Errorf("instructions %q do not say why there is no session", ins)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	res, text, o := call(t, cs, "greet", map[string]any{"name": "Ada"})
	if !res.IsError || o.Status != "refused" {
		t.Fatalf("greet on a dirty tree: isError %v outcome %+v", res.IsError, o)
	}
	for _, want := range []string{"uncommitted changes", "examples/agent/notes-uncommitted.txt", "commit", "--allow-dirty", "restart the MCP server"} {
		if !strings.Contains(text, want) {
			t.Errorf("refusal %q does not name %q", text, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".proofgate", "runs")); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(filepath.Join(dir, ".proofgate", "runs"))
		t.Errorf("a refused tree planned or recorded something: %v %v", ents, err)
	}
	cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("proofgate mcp exit %v, want 2\nstderr:\n%s", cmd.ProcessState, stderr.String())
	}
	if !strings.Contains(stderr.String(), "uncommitted changes") {
		t.Errorf("stderr does not say why:\n%s", stderr.String())
	}
}
