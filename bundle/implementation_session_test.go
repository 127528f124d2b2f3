package bundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// sessionContract is implContract with real tools: greet (allowed), wipe
// (blocked by a rule), deploy (require-approval), each a real process.
func sessionContract(t testing.TB, cfile string) *contract.Resolved {
	t.Helper()
	c, err := contract.Load(cfile, "")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, argv ...string) contract.Tool {
		return contract.Tool{Name: name, Run: argv, Runtime: "process", Pull: "never", Network: "none", Workspace: "readonly",
			Timeout: contract.Duration(20 * time.Second), Output: contract.Size(1 << 20),
			Params: map[string]contract.Param{"name": {Type: "string", Required: true, MaxLength: 64}}}
	}
	c.Tools = []contract.Tool{mk("greet", "/bin/echo", "hello", "{{name}}"), mk("wipe", "/bin/echo", "wiping", "{{name}}"),
		mk("deploy", "/bin/echo", "deploying", "{{name}}")}
	c.Policy = []contract.Rule{{ID: "no-wipe", Tool: "wipe", Effect: "block", Reason: "never delete the tree"},
		{ID: "rule-1", Tool: "greet", Effect: "allow"}, {ID: "rule-2", Tool: "deploy", Effect: "require-approval"}}
	return c
}

func processOnly(kind string) (runtime.Runtime, error) {
	if kind != "process" {
		return nil, fmt.Errorf("runtime %q not available in this test", kind)
	}
	return process.New(), nil
}

// sessionRepo is a repository with sessionContract and an IMPLEMENTING run.
type sessionRepo struct {
	repo, state, implID string
	c                   *contract.Resolved
	popts               run.PlanOptions
}

func newSessionRepo(t *testing.T) *sessionRepo {
	t.Helper()
	repo, cfile := contractRepo(t, implContract)
	s := &sessionRepo{repo: repo, state: filepath.Join(repo, ".proofgate"), c: sessionContract(t, cfile)}
	s.popts = run.PlanOptions{RepoDir: repo, StateDir: s.state, Contract: s.c, Origin: "git:base:.proofgate/contract.yaml", Repo: "acme/widget"}
	o := s.popts
	o.Implement = true
	a, err := run.Plan(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	s.implID = a.ID
	a.Close()
	return s
}

func (s *sessionRepo) opts(agent string) session.Options {
	return session.Options{StateDir: s.state, Run: s.implID, RepoDir: s.repo, Agent: agent, Runtime: processOnly, LockWait: 5 * time.Second}
}

func call(t *testing.T, ss *session.Session, tool, args string) session.Result {
	t.Helper()
	res, err := ss.Call(context.Background(), session.Call{Tool: tool, Args: []byte(args)})
	if err != nil {
		t.Fatalf("call %s %s: %v", tool, args, err)
	}
	return res
}

// A real session (allow, block, approval by another person) in A; the
// agent's commit; B verifies it; the bundle carries A and verifies, and a
// successor is refused while a session is open.
func TestImplementationRealSession(t *testing.T) {
	s := newSessionRepo(t)
	ctx := context.Background()
	ss, err := session.Start(ctx, s.opts("claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, ss, "greet", `{"name":"Ada"}`); res.Status != session.Status("finished") || !strings.Contains(string(res.Stdout), "hello Ada") {
		t.Fatalf("greet: %+v", res)
	}
	if res := call(t, ss, "wipe", `{"name":"all"}`); res.Status != session.Status("blocked") {
		t.Fatalf("wipe: %+v", res)
	}
	pending := call(t, ss, "deploy", `{"name":"staging"}`)
	if pending.Status != session.Status("pending-approval") {
		t.Fatalf("deploy: %+v", pending)
	}

	// While the session is open, no successor.
	popts := s.popts
	popts.ImplementedBy = s.implID
	_, err = run.Plan(ctx, popts)
	var ie *run.ImplementedByError
	if !errors.As(err, &ie) || ie.Reason != run.ImplSessionOpen {
		t.Fatalf("successor of an open session: %v", err)
	}

	if err := session.Approve(s.opts("claude-code"), pending.Action, "alice"); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ss, "deploy", `{"name":"staging"}`); res.Status != session.Status("finished") || res.Action != pending.Action {
		t.Fatalf("deploy after approval: %+v", res)
	}
	if err := ss.End("done"); err != nil {
		t.Fatal(err)
	}

	os.WriteFile(filepath.Join(s.repo, "agent.txt"), []byte("the agent's change\n"), 0o644)
	git(t, s.repo, "add", "-A")
	git(t, s.repo, "commit", "-q", "-m", "agent")
	b, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Exec(ctx, run.ExecOptions{RepoDir: s.repo, StateDir: s.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Decide(ctx, run.DecisionOptions{Actor: "bob", Fresh: run.Freshness{RepoDir: s.repo, StateDir: s.state}}); err != nil {
		t.Fatal(err)
	}
	bDir := b.Dir
	b.Close()
	a, err := run.Audit(run.NewStore(s.state).Path(s.implID))
	if err != nil || a.State != replay.Superseded || len(a.Sessions) != 1 || len(a.Sessions[0].Calls) != 3 {
		t.Fatalf("implementation run: %+v %v", a, err)
	}

	k := newKey(t)
	var buf bytes.Buffer
	if _, err := Export(bDir, k.s, &buf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	commit := git(t, s.repo, "rev-parse", "HEAD")
	res, err := Verify(bytes.NewReader(buf.Bytes()), storeWith(t, k), VerifyOptions{AnyContract: true, Commit: commit, RequireApprovals: 1})
	if err != nil {
		t.Fatalf("bundle refused: %v", err)
	}
	if ib := res.Run.ImplementedBy; ib == nil || ib.Run != s.implID || ib.Sessions != 1 || ib.ToolCalls != 3 || ib.Length != a.ChainLength-1 {
		t.Fatalf("implemented_by %+v (implementation run has %d events)", res.Run.ImplementedBy, a.ChainLength)
	}

	// The implementation run's receipts travel: each tampering below is
	// re-chained and re-signed by the trusted key, and still refused.
	fs := files(t, buf.Bytes())
	a0 := ImplementationPrefix + s.implID + "/"
	other := makeImplemented(t)
	otherFS := files(t, export(t, other.fixture, k, ExportOptions{}))
	// tool.decided in log order: greet (policy), wipe (policy), deploy
	// (policy), deploy (human approve by alice).
	const humanApproval = 3
	for _, tc := range []struct {
		name   string
		fs     []archive.File
		want   Reason
		replay replay.AuditReason
	}{
		{"forged receipt: output hash", rewriteRun(t, fs, k, a0, editData(t, replay.TypeToolFinished, 0, func(d map[string]any) {
			d["output_hash"] = "sha256:" + strings.Repeat("e", 64)
		})), AuditFailed, replay.ReasonReceipt},
		{"forged receipt: the blocked call started", rewriteRun(t, fs, k, a0, insertAfter(t, replay.TypeToolDecided, 1, replay.TypeToolStarted, map[string]any{
			"action": dataOf(t, fs, a0, replay.TypeToolRequested, 1)["action"], "receipt": "r-0000000000ff", "session": dataOf(t, fs, a0, replay.TypeToolRequested, 1)["session"],
			"tool": "wipe", "input_hash": dataOf(t, fs, a0, replay.TypeToolRequested, 1)["input_hash"], "input_ref": dataOf(t, fs, a0, replay.TypeToolRequested, 1)["input_ref"],
			"decision": "allow", "owner": dataOf(t, fs, a0, replay.TypeSessionStarted, 0)["owner"]})), AuditFailed, replay.ReasonDenied},
		{"approval replayed for another input hash", rewriteRun(t, fs, k, a0, editData(t, replay.TypeToolDecided, humanApproval, func(d map[string]any) {
			d["input_hash"] = dataOf(t, fs, a0, replay.TypeToolRequested, 0)["input_hash"]
		})), AuditFailed, replay.ReasonApprovalBinding},
		{"approval by the session's own agent", rewriteRun(t, fs, k, a0, editData(t, replay.TypeToolDecided, humanApproval, func(d map[string]any) {
			d["actor"] = "claude-code"
		})), AuditFailed, replay.ReasonSelfApproval},
		{"implementation log from another run", resign(t, swapImplementation(fs, a0, otherFS, ImplementationPrefix+other.implID+"/"), k, func(st *Statement) {
			st.Subject = subjectsFor(swapImplementation(fs, a0, otherFS, ImplementationPrefix+other.implID+"/"))
		}), ImplementationMismatch, ""},
		{"implemented_by head edited", rewriteRun(t, fs, k, "", editData(t, replay.TypePlanned, 0, func(d map[string]any) {
			d["implemented_by"].(map[string]any)["head"] = "sha256:" + strings.Repeat("1", 64)
		})), ImplementationMismatch, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(repack(t, tc.fs)), storeWith(t, k), anyRun)
			if reasonOf(err) != tc.want || (tc.replay != "" && replayReason(err) != tc.replay) {
				t.Fatalf("refusal %v, want %s (%s)", err, tc.want, tc.replay)
			}
		})
	}
}
