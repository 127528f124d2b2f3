package bundle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// implFixture is a real repository with an implementation run A (its
// session events written through kernel/eventlog as the recorder writes
// them: allowed, approval-required and manifest-input calls), the agent's
// commit, and the COMPLETE successor B planned with implemented_by A.
type implFixture struct {
	*fixture        // B
	implID, implDir string
	c               *contract.Resolved
}

const implContract = `version: 1
name: agent
defaults: {runtime: process, timeout: 60s}
checks:
  - id: hello
    run: [sh, -c, 'echo verified']
approval: {required: 1}
`

// implContractResolved is implContract with three tools and their policy
// (set on the resolved contract: the freeze and hash are what matter here).
func implContractResolved(t testing.TB, cfile string) *contract.Resolved {
	t.Helper()
	c, err := contract.Load(cfile, "")
	if err != nil {
		t.Fatal(err)
	}
	tool := func(name string) contract.Tool {
		return contract.Tool{Name: name, Run: []string{"/bin/echo", name}, Runtime: "process", Pull: "never",
			Network: "none", Workspace: "readonly", Timeout: c.Checks[0].Timeout, Output: c.Checks[0].Output}
	}
	c.Tools = []contract.Tool{tool("greet"), tool("wipe"), tool("deploy")}
	c.Policy = []contract.Rule{{ID: "no-wipe", Tool: "wipe", Effect: "block"}, {ID: "rule-1", Tool: "greet", Effect: "allow"},
		{ID: "rule-2", Tool: "deploy", Effect: "require-approval"}}
	return c
}

// sessionWriter appends session events to a closed run's log, as
// internal/session does through internal/run.
type sessionWriter struct {
	t     testing.TB
	lg    *eventlog.Log
	bs    *blob.Store
	owner replay.Owner
	n     int
}

func (w *sessionWriter) add(typ string, data any) {
	w.t.Helper()
	if _, err := w.lg.Append(typ, data); err != nil {
		w.t.Fatalf("append %s: %v", typ, err)
	}
}

func (w *sessionWriter) id(prefix string) string { w.n++; return fmt.Sprintf("%s-%012x", prefix, w.n) }

// call records one call of tool with args through its policy decision
// (and a human approval by approver when the policy requires one),
// receipts and result.
func (w *sessionWriter) call(sess, turn, tool, effect string, rule int, ruleID string, args []byte, approver string) {
	w.t.Helper()
	canonical, err := input.Canonical(args)
	if err != nil {
		w.t.Fatal(err)
	}
	st, err := input.Store(w.bs, canonical)
	if err != nil {
		w.t.Fatal(err)
	}
	action := w.id("a")
	w.add(replay.TypeToolRequested, replay.ToolRequestedData{Session: sess, Turn: turn, Call: action, Tool: tool,
		InputHash: st.Hash, InputRef: st.Ref, Manifest: st.Manifest})
	w.add(replay.TypeToolDecided, replay.ToolDecidedData{Call: action, By: replay.ByPolicy, Decision: effect, Rule: &rule, RuleID: ruleID})
	allowed := replay.DecisionAllow
	switch effect {
	case replay.DecisionBlock:
		return
	case replay.DecisionRequireApproval:
		w.add(replay.TypeToolDecided, replay.ToolDecidedData{Call: action, By: replay.ByHuman, Decision: replay.DecisionApprove, InputHash: st.Hash, Actor: approver})
		allowed = replay.DecisionApprove
	}
	receipt := w.id("r")
	w.add(replay.TypeToolStarted, replay.ToolStartedData{Call: action, Receipt: receipt, Session: sess, Tool: tool,
		InputHash: st.Hash, InputRef: st.Ref, Decision: allowed, Owner: w.owner})
	out := []byte("ran " + tool + "\n")
	d, err := w.bs.Put(out)
	if err != nil {
		w.t.Fatal(err)
	}
	stdout := &runtime.Stream{Digest: d, Size: int64(len(out))}
	oh, _ := replay.OutputHash(0, runtime.Passed, stdout, nil)
	w.add(replay.TypeToolFinished, replay.ToolFinishedData{Call: action, Receipt: receipt, Result: replay.ResultSuccess,
		Outcome: runtime.Passed, DurationMS: 3, OutputHash: oh, Stdout: stdout, Attestation: &runtime.Attestation{Provider: "process"}})
}

// messages is a conversation input: stored as a manifest of message blobs.
func messages(n int) []byte {
	s := `{"messages":[`
	for i := 0; i < n; i++ {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(`{"role":"user","content":"turn %d"}`, i)
	}
	return []byte(s + `],"name":"Ada"}`)
}

// makeImplemented builds A (IMPLEMENTING, one ended session with three
// calls), the agent's commit, and B verifying it, approved by alice.
func makeImplemented(t testing.TB) *implFixture {
	t.Helper()
	repo, cfile := contractRepo(t, implContract)
	state := filepath.Join(repo, ".proofgate")
	c := implContractResolved(t, cfile)
	ctx := context.Background()
	// A base-branch origin: the tools are set on the resolved contract, so
	// the file in the work tree is not what governs (as on a pull request).
	popts := run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: "git:base:.proofgate/contract.yaml", Repo: "acme/widget"}
	a, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	implID, implDir := a.ID, a.Dir
	a.Close()
	writeSession(t, implDir)

	os.WriteFile(filepath.Join(repo, "agent.txt"), []byte("the agent's change\n"), 0o644)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "agent")
	popts.ImplementedBy = implID
	b, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Decide(ctx, run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: repo, StateDir: state}}); err != nil {
		t.Fatal(err)
	}
	if st := b.State(); st != replay.Complete {
		t.Fatalf("successor is %s", st)
	}
	return &implFixture{fixture: &fixture{repo: repo, state: state, runDir: b.Dir, id: b.ID,
		commit: git(t, repo, "rev-parse", "HEAD"), tree: git(t, repo, "rev-parse", "HEAD^{tree}")},
		implID: implID, implDir: implDir, c: c}
}

// writeSession moves run dir to IMPLEMENTING and records one session in
// it; the run's projection is left lagging, which the next writer repairs.
func writeSession(t testing.TB, dir string) {
	t.Helper()
	lg, err := eventlog.Open(filepath.Join(dir, replay.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	w := &sessionWriter{t: t, lg: lg, bs: blob.New(filepath.Join(dir, replay.BlobDir)),
		owner: replay.Owner{PID: os.Getpid(), Start: 12345, BootID: "boot-1", Host: "ci-runner", Created: time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)}}
	w.add(replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Implementing, Reason: "agent session"})
	sess := w.id("s")
	w.add(replay.TypeSessionStarted, replay.SessionStartedData{Session: sess, Agent: "claude-code", Owner: w.owner})
	w.add(replay.TypeTurnStarted, replay.TurnData{Session: sess, Turn: "t-1"})
	w.call(sess, "t-1", "greet", replay.DecisionAllow, 1, "rule-1", []byte(`{"name":"Ada"}`), "")
	w.call(sess, "t-1", "deploy", replay.DecisionRequireApproval, 2, "rule-2", []byte(`{"env":"staging"}`), "alice")
	w.call(sess, "t-1", "greet", replay.DecisionAllow, 1, "rule-1", messages(4), "")
	w.call(sess, "t-1", "wipe", replay.DecisionBlock, 0, "no-wipe", []byte(`{}`), "")
	w.add(replay.TypeTurnFinished, replay.TurnData{Session: sess, Turn: "t-1"})
	w.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sess, Reason: "done"})
}
