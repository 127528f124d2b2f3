package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/mcp"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// The MCP inspector's CLI (@modelcontextprotocol/inspector-cli, npm;
// scripts/inspector-up.sh installs it and exports PROOFGATE_INSPECTOR)
// drives `proofgate mcp` over stdio, one process per request, as a user
// would from a shell.

// inspectorBin returns the inspector CLI, or skips — fails under
// PROOFGATE_REQUIRE_INSPECTOR=1: CI must not pass a skipped client test.
func inspectorBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PROOFGATE_INSPECTOR")
	if bin == "" {
		if p, err := exec.LookPath("mcp-inspector-cli"); err == nil {
			bin = p
		}
	}
	if bin != "" {
		if _, err := os.Stat(bin); err == nil {
			if _, err := exec.LookPath("node"); err == nil {
				return bin
			}
		}
	}
	if os.Getenv("PROOFGATE_REQUIRE_INSPECTOR") == "1" {
		t.Fatalf("PROOFGATE_REQUIRE_INSPECTOR=1 but the inspector CLI is missing (PROOFGATE_INSPECTOR=%q; run scripts/inspector-up.sh)", bin)
	}
	t.Skip("the MCP inspector CLI is not installed (bash scripts/inspector-up.sh, then PROOFGATE_INSPECTOR=<its path>)")
	return ""
}

// inspectorResult is the JSON the inspector prints for a method.
type inspectorResult struct {
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool        `json:"isError"`
	StructuredContent mcp.Outcome `json:"structuredContent"`
}

// inspect runs the inspector in dir with PATH leading to the proofgate
// binary, and decodes what it printed.
func inspect(t *testing.T, insp, bin, dir string, args ...string) inspectorResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, insp, append([]string{"--cli"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cliEnv(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
	}
	var r inspectorResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("inspector %v printed no JSON: %v\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
	}
	return r
}

// text is the content's text blocks but the last, which must be the
// serialized structuredContent (the MCP specification's SHOULD for a
// tool with structured content); "" when it is not.
func (r inspectorResult) text() string {
	var s []string
	for _, c := range r.Content {
		s = append(s, c.Text)
	}
	if len(s) == 0 {
		return ""
	}
	var last mcp.Outcome
	if strictjson.Decode([]byte(s[len(s)-1]), &last) != nil || !reflect.DeepEqual(last, r.StructuredContent) {
		return "(the last content block is not the serialized structuredContent)"
	}
	return strings.Join(s[:len(s)-1], "\n")
}

func TestMCPInspectorCLI(t *testing.T) {
	insp := inspectorBin(t)
	bin := buildProofgate(t)
	dir := agentRepo(t)
	runID := strings.TrimSpace(mustCLI(t, 0, bin, dir, "plan", "--implement"))
	sess := strings.TrimSpace(mustCLI(t, 0, bin, dir, "session", "start", runID, "--agent", "inspector"))
	server := []string{"proofgate", "mcp", runID, "--session", sess}
	do := func(args ...string) inspectorResult {
		return inspect(t, insp, bin, dir, append(slices.Clone(server), args...)...)
	}

	lt := do("--method", "tools/list")
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"greet", "deploy"}) {
		t.Fatalf("tools/list = %v, want [greet deploy]", names)
	}
	var schema bytes.Buffer
	if err := json.Compact(&schema, lt.Tools[1].InputSchema); err != nil || !bytes.Contains(schema.Bytes(), []byte(`"enum":["staging","production"]`)) {
		t.Errorf("deploy inputSchema: %s (%v)", lt.Tools[1].InputSchema, err)
	}

	r := do("--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada Lovelace")
	if r.IsError || r.text() != "hello Ada Lovelace\n" {
		t.Fatalf("greet: isError %v text %q", r.IsError, r.text())
	}
	r = do("--method", "tools/call", "--tool-name", "wipe", "--tool-arg", "path=README.md")
	if !r.IsError || r.text() != "blocked by policy rule no-wipe: never delete the tree" {
		t.Fatalf("wipe: isError %v text %q", r.IsError, r.text())
	}
	r = do("--method", "tools/call", "--tool-name", "Greet", "--tool-arg", "name=Ada")
	if !r.IsError || !strings.HasPrefix(r.text(), "blocked by policy rule default") {
		t.Fatalf("Greet: isError %v text %q", r.IsError, r.text())
	}
	r = do("--method", "tools/call", "--tool-name", "deploy", "--tool-arg", "target=staging")
	action := r.StructuredContent.Action
	if r.IsError || r.text() != mcp.PendingText(runID, action) {
		t.Fatalf("deploy before approval: isError %v text %q", r.IsError, r.text())
	}
	mustCLI(t, exitOK, bin, dir, "tool", "approve", runID, action, "--actor", "alice")
	r = do("--method", "tools/call", "--tool-name", "deploy", "--tool-arg", "target=staging")
	if r.IsError || r.text() != "deploying to staging\n" || r.StructuredContent.Action != action {
		t.Fatalf("deploy after approval: isError %v text %q %+v", r.IsError, r.text(), r.StructuredContent)
	}
	mustCLI(t, exitOK, bin, dir, "session", "end", runID, "--session", sess)
	mustCLI(t, exitOK, bin, dir, "events", "verify", runID)
	types, _ := eventTypes(t, dir, runID)
	if count(types, "tool.finished") != 2 || count(types, "session.ended") != 1 {
		t.Fatalf("events: %v", types)
	}

	// The README's .mcp.json, as Claude Code reads it: `proofgate mcp`
	// plans a run of its own and ends its session when the client leaves.
	lt = inspect(t, insp, bin, dir, "--config", ".mcp.json", "--server", "proofgate", "--method", "tools/list")
	if len(lt.Tools) != 2 {
		t.Fatalf("tools/list through .mcp.json: %+v", lt.Tools)
	}
	ents, err := os.ReadDir(filepath.Join(dir, ".proofgate", "runs"))
	if err != nil || len(ents) != 2 {
		t.Fatalf("runs after .mcp.json: %v %v", ents, err)
	}
	other := ents[0].Name()
	if other == runID {
		other = ents[1].Name()
	}
	types, _ = eventTypes(t, dir, other)
	if count(types, "session.started") != 1 || types[len(types)-1] != "session.ended" {
		t.Fatalf("the .mcp.json session: %v", types)
	}
}
