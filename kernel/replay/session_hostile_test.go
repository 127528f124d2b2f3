package replay_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// sessionContract declares greet (allowed), wipe (blocked by an explicit
// rule) and deploy (require-approval).
func sessionContract() *contract.Resolved {
	tool := func(name string) contract.Tool {
		return contract.Tool{Name: name, Run: []string{"/bin/true"}, Runtime: "process"}
	}
	return &contract.Resolved{Version: 1, Name: "agent", Checks: []contract.Check{},
		Tools: []contract.Tool{tool("greet"), tool("wipe"), tool("deploy")},
		Policy: []contract.Rule{
			{ID: "no-wipe", Tool: "wipe", Effect: "block", Reason: "never delete the tree"},
			{ID: "rule-1", Tool: "greet", Effect: "allow"},
			{ID: "rule-2", Tool: "deploy", Effect: "require-approval"},
		}}
}

// logb builds an event list for replay.Fold; it does not chain lines (the
// chain is kernel/eventlog's business, tested there).
type logb struct {
	t  *testing.T
	c  *contract.Resolved
	ev []eventlog.Event
}

var (
	commit = "0123456789abcdef0123456789abcdef01234567"
	owner1 = replay.Owner{PID: 100, Start: 5, BootID: "boot", Host: "h", Created: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	owner2 = replay.Owner{PID: 200, Start: 7, BootID: "boot", Host: "h", Created: time.Date(2026, 12, 1, 0, 1, 0, 0, time.UTC)}
)

func newLog(t *testing.T, implementing bool) *logb {
	c := sessionContract()
	hash, err := c.Hash()
	if err != nil {
		t.Fatal(err)
	}
	b := &logb{t: t, c: c}
	b.ev = append(b.ev, eventlog.Event{Type: replay.TypePlanned, Contract: hash, Source: eventlog.Source{Commit: commit, Tree: commit},
		Data: mustJSON(t, replay.PlannedData{Contract: replay.ContractRef{Hash: hash, Origin: "file:c"}, Worktree: replay.WorktreeState{Commit: commit, Tree: commit, Digest: "sha256:" + hex64('0')}, Checks: []string{}, Planner: "test"})})
	if implementing {
		b.add(replay.TypeState, replay.StateData{From: replay.Planned, To: replay.Implementing})
	}
	return b
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *logb) add(typ string, data any) *logb {
	b.ev = append(b.ev, eventlog.Event{Type: typ, Contract: b.ev[0].Contract, Source: b.ev[0].Source, Data: mustJSON(b.t, data)})
	return b
}

// fold replays the log; want "" expects success, else the reason at the
// last line.
func (b *logb) fold(want replay.AuditReason) *replay.Report {
	b.t.Helper()
	rep, err := replay.Fold(b.c, b.ev)
	if want == "" {
		if err != nil {
			b.t.Fatalf("replay refused a valid log: %v", err)
		}
		return rep
	}
	if !replay.IsReason(err, want) {
		b.t.Fatalf("replay: got %v, want reason %s", err, want)
	}
	if ae := err.(*replay.AuditError); ae.Line != len(b.ev) {
		b.t.Fatalf("refused at line %d, want %d (the forged line): %v", ae.Line, len(b.ev), err)
	}
	return nil
}

const (
	sid   = "s-000000000001"
	sid2  = "s-000000000002"
	act   = "a-000000000001"
	act2  = "a-000000000002"
	rcpt  = "r-000000000001"
	rcpt2 = "r-000000000002"
)

var (
	inHash  = "sha256:" + hex64('a')
	inHash2 = "sha256:" + hex64('b')
	outBlob = "sha256:" + hex64('c')
)

func rule(n int) *int { return &n }

func (b *logb) started() *logb {
	return b.add(replay.TypeSessionStarted, replay.SessionStartedData{Session: sid, Agent: "agent-1", Owner: owner1})
}

func (b *logb) request(action, tool, hash string) *logb {
	return b.add(replay.TypeToolRequested, replay.ToolRequestedData{Session: sid, Call: action, Tool: tool, InputHash: hash, InputRef: hash})
}

func (b *logb) policy(action, decision string, r int, id string) *logb {
	return b.add(replay.TypeToolDecided, replay.ToolDecidedData{Call: action, By: replay.ByPolicy, Decision: decision, Rule: rule(r), RuleID: id})
}

func (b *logb) human(action, decision, actor, hash string) *logb {
	return b.add(replay.TypeToolDecided, replay.ToolDecidedData{Call: action, By: replay.ByHuman, Decision: decision, Actor: actor, InputHash: hash})
}

func (b *logb) start(action, receipt, tool, hash, by string, o replay.Owner) *logb {
	return b.add(replay.TypeToolStarted, replay.ToolStartedData{Call: action, Receipt: receipt, Session: sid, Tool: tool, InputHash: hash, InputRef: hash, Decision: by, Owner: o})
}

func finished(t *testing.T, action, receipt string, exit int, outcome runtime.Outcome, result string) replay.ToolFinishedData {
	so := &runtime.Stream{Digest: outBlob}
	oh, err := replay.OutputHash(exit, outcome, so, so)
	if err != nil {
		t.Fatal(err)
	}
	return replay.ToolFinishedData{Call: action, Receipt: receipt, Result: result, Outcome: outcome, ExitCode: exit, OutputHash: oh,
		Stdout: so, Stderr: so, Attestation: &runtime.Attestation{Provider: "process"}}
}

func (b *logb) finish(action, receipt string) *logb {
	return b.add(replay.TypeToolFinished, finished(b.t, action, receipt, 0, runtime.Passed, replay.ResultSuccess))
}

// greet: one allowed call, complete.
func (b *logb) greet() *logb {
	return b.request(act, "greet", inHash).policy(act, "allow", 1, "rule-1").start(act, rcpt, "greet", inHash, "allow", owner1).finish(act, rcpt)
}

func TestSessionReplayValid(t *testing.T) {
	b := newLog(t, true).started().greet()
	b.request(act2, "deploy", inHash2).policy(act2, "require-approval", 2, "rule-2").human(act2, "approve", "alice", inHash2).
		start(act2, rcpt2, "deploy", inHash2, "approve", owner1).finish(act2, rcpt2)
	b.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sid})
	b.add(replay.TypeState, replay.StateData{From: replay.Implementing, To: replay.Verifying})
	rep := b.fold("")
	if len(rep.Sessions) != 1 || len(rep.Sessions[0].Calls) != 2 || rep.Sessions[0].Open {
		t.Fatalf("sessions = %+v", rep.Sessions)
	}
	a := rep.Sessions[0].Calls[1]
	if a.Status != replay.CallFinished || a.Approval != "approve" || a.Approver != "alice" || a.Result != "success" {
		t.Fatalf("action = %+v", a)
	}
	want := []string{inHash, inHash2, outBlob}
	if fmt.Sprint(rep.Blobs) != fmt.Sprint(want) {
		t.Fatalf("blobs = %v, want %v", rep.Blobs, want)
	}
}

// Each forged or misordered line is refused with its reason, at its line.
func TestSessionReplayHostile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *logb)
		want  replay.AuditReason
	}{
		{"session outside IMPLEMENTING", func(b *logb) {
			b.ev = b.ev[:1]
			b.started()
		}, replay.ReasonSessionState},
		{"tool event after IMPLEMENTING", func(b *logb) {
			b.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sid})
			b.add(replay.TypeState, replay.StateData{From: replay.Implementing, To: replay.Verifying})
			b.human(act, "approve", "alice", inHash)
		}, replay.ReasonSessionState},
		{"second open session", func(b *logb) {
			b.add(replay.TypeSessionStarted, replay.SessionStartedData{Session: sid2, Agent: "agent-2", Owner: owner2})
		}, replay.ReasonSessionOpen},
		{"leave IMPLEMENTING with the session open", func(b *logb) {
			b.add(replay.TypeState, replay.StateData{From: replay.Implementing, To: replay.Verifying})
		}, replay.ReasonSessionOpen},
		{"cancel with the session open", func(b *logb) {
			b.add(replay.TypeState, replay.StateData{From: replay.Implementing, To: replay.Cancelled})
		}, replay.ReasonSessionOpen},
		{"leave IMPLEMENTING with a started action", func(b *logb) {
			b.request(act2, "greet", inHash2).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash2, "allow", owner1)
			b.add(replay.TypeState, replay.StateData{From: replay.Implementing, To: replay.Verifying})
		}, replay.ReasonUnfinished},
		{"turn for an unknown session", func(b *logb) {
			b.add(replay.TypeTurnStarted, replay.TurnData{Session: sid2, Turn: "t-1"})
		}, replay.ReasonUnknownSession},
		{"turn finished never started", func(b *logb) {
			b.add(replay.TypeTurnFinished, replay.TurnData{Session: sid, Turn: "t-1"})
		}, replay.ReasonTurn},
		{"turn out of sequence", func(b *logb) {
			b.add(replay.TypeTurnStarted, replay.TurnData{Session: sid, Turn: "t-2"})
		}, replay.ReasonTurn},
		{"call in an unstarted turn", func(b *logb) {
			b.add(replay.TypeToolRequested, replay.ToolRequestedData{Session: sid, Turn: "t-1", Call: act2, Tool: "greet", InputHash: inHash, InputRef: inHash})
		}, replay.ReasonTurn},
		{"tool in a closed session", func(b *logb) {
			b.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sid})
			b.request(act2, "greet", inHash)
		}, replay.ReasonUnknownSession},
		{"decision for an unknown action", func(b *logb) {
			b.policy(act2, "allow", 1, "rule-1")
		}, replay.ReasonUnknownAction},
		{"started with no decision", func(b *logb) {
			b.request(act2, "greet", inHash).start(act2, rcpt2, "greet", inHash, "allow", owner1)
		}, replay.ReasonUndecided},
		{"started after block", func(b *logb) {
			b.request(act2, "wipe", inHash).policy(act2, "block", 0, "no-wipe").start(act2, rcpt2, "wipe", inHash, "allow", owner1)
		}, replay.ReasonDenied},
		{"started pending approval", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").start(act2, rcpt2, "deploy", inHash, "approve", owner1)
		}, replay.ReasonUndecided},
		{"started after reject", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").human(act2, "reject", "alice", inHash).start(act2, rcpt2, "deploy", inHash, "approve", owner1)
		}, replay.ReasonDenied},
		{"forged allow of a blocked tool", func(b *logb) {
			b.request(act2, "wipe", inHash).policy(act2, "allow", 1, "rule-1")
		}, replay.ReasonPolicyMismatch},
		{"forged allow of an unknown tool", func(b *logb) {
			b.request(act2, "Greet", inHash).policy(act2, "allow", 1, "rule-1")
		}, replay.ReasonPolicyMismatch},
		{"approval for another input hash", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").human(act2, "approve", "alice", inHash2)
		}, replay.ReasonApprovalBinding},
		{"approval of an allowed action", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").human(act2, "approve", "alice", inHash)
		}, replay.ReasonApprovalBinding},
		{"second approval", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").human(act2, "approve", "alice", inHash).human(act2, "approve", "bob", inHash)
		}, replay.ReasonApprovalBinding},
		{"approval by the session's own agent", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").human(act2, "approve", "Agent-1", inHash)
		}, replay.ReasonSelfApproval},
		// issue 25 class 7: a whitespace or lookalike variant of the agent is the agent.
		{"approval by the agent, trailing space", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").human(act2, "approve", "agent-1 ", inHash)
		}, replay.ReasonSelfApproval},
		{"approval by the agent, Cyrillic lookalike", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").human(act2, "approve", "аgent-1", inHash)
		}, replay.ReasonSelfApproval},
		{"approval by the agent, fullwidth", func(b *logb) {
			b.request(act2, "deploy", inHash).policy(act2, "require-approval", 2, "rule-2").human(act2, "approve", "ＡＧＥＮＴ-1", inHash)
		}, replay.ReasonSelfApproval},
		{"start with another input than requested", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash2, "allow", owner1)
		}, replay.ReasonReceipt},
		{"start by another owner", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash, "allow", owner2)
		}, replay.ReasonSessionOwner},
		{"two starts", func(b *logb) {
			b.start(act, rcpt2, "greet", inHash, "allow", owner1)
		}, replay.ReasonReceipt},
		{"finish without start", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").finish(act2, rcpt2)
		}, replay.ReasonReceipt},
		{"second finish", func(b *logb) { b.finish(act, rcpt) }, replay.ReasonReceipt},
		{"success with a non-zero exit", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash, "allow", owner1)
			b.add(replay.TypeToolFinished, finished(t, act2, rcpt2, 3, runtime.Passed, replay.ResultSuccess))
		}, replay.ReasonReceipt},
		{"forged output hash", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash, "allow", owner1)
			d := finished(t, act2, rcpt2, 0, runtime.Passed, replay.ResultSuccess)
			d.OutputHash = inHash
			b.add(replay.TypeToolFinished, d)
		}, replay.ReasonReceipt},
		{"crashed without recovery", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash, "allow", owner1)
			d := finished(t, act2, rcpt2, -1, "", replay.ResultCrashed)
			d.ClosedBy = replay.ClosedByRecovery
			b.add(replay.TypeToolFinished, d)
		}, replay.ReasonReceipt},
		{"end with a started action", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash, "allow", owner1)
			b.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sid})
		}, replay.ReasonUnfinished},
		{"resume listing no ambiguous action", func(b *logb) {
			b.request(act2, "greet", inHash).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash, "allow", owner1)
			b.add(replay.TypeSessionResumed, replay.SessionResumedData{Session: sid, Owner: owner2, PreviousOwner: owner1, Ambiguous: []string{}})
		}, replay.ReasonAmbiguous},
		{"resume naming another previous owner", func(b *logb) {
			b.add(replay.TypeSessionResumed, replay.SessionResumedData{Session: sid, Owner: owner2, PreviousOwner: owner2, Ambiguous: []string{}})
		}, replay.ReasonSessionOwner},
		{"a call while an action is ambiguous", func(b *logb) {
			b.crashed()
			b.request("a-000000000003", "greet", inHash2)
		}, replay.ReasonAmbiguous},
		{"end while an action is ambiguous", func(b *logb) {
			b.crashed()
			b.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sid})
		}, replay.ReasonAmbiguous},
		{"retry of an action that is not ambiguous", func(b *logb) {
			b.human(act, "retry", "alice", "")
		}, replay.ReasonApprovalBinding},
		{"retry_of with another input", func(b *logb) {
			b.crashed()
			b.human(act2, "retry", "alice", "")
			b.add(replay.TypeToolRequested, replay.ToolRequestedData{Session: sid, Call: "a-000000000003", Tool: "greet", InputHash: inHash, InputRef: inHash, RetryOf: act2})
		}, replay.ReasonApprovalBinding},
		{"single-blob input ref that is not its hash", func(b *logb) {
			b.add(replay.TypeToolRequested, replay.ToolRequestedData{Session: sid, Call: act2, Tool: "greet", InputHash: inHash, InputRef: inHash2})
		}, replay.ReasonSessionBadFields},
		{"agent that is not printable", func(b *logb) {
			b.ev = b.ev[:2]
			b.add(replay.TypeSessionStarted, replay.SessionStartedData{Session: sid, Agent: "agent\n", Owner: owner1})
		}, replay.ReasonSessionBadFields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newLog(t, true).started().greet()
			tc.build(b)
			b.fold(tc.want)
		})
	}
}

// crashed leaves action act2 started by owner1, then resumed by owner2
// and closed crashed by recovery: ambiguous.
func (b *logb) crashed() *logb {
	b.request(act2, "greet", inHash2).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash2, "allow", owner1)
	b.add(replay.TypeSessionResumed, replay.SessionResumedData{Session: sid, Owner: owner2, PreviousOwner: owner1, Ambiguous: []string{act2}})
	d := finished(b.t, act2, rcpt2, -1, "", replay.ResultCrashed)
	d.Stdout, d.Stderr, d.Attestation, d.ClosedBy = nil, nil, nil, replay.ClosedByRecovery
	d.OutputHash, _ = replay.OutputHash(-1, "", nil, nil)
	return b.add(replay.TypeToolFinished, d)
}

// Recovery then retry and abandon replay, and the retried call starts
// under the new owner.
func TestSessionReplayRecovery(t *testing.T) {
	b := newLog(t, true).started().greet().crashed()
	b.fold("")
	b.human(act2, "retry", "alice", "")
	b.add(replay.TypeToolRequested, replay.ToolRequestedData{Session: sid, Call: "a-000000000003", Tool: "greet", InputHash: inHash2, InputRef: inHash2, RetryOf: act2})
	b.policy("a-000000000003", "allow", 1, "rule-1").start("a-000000000003", "r-000000000003", "greet", inHash2, "allow", owner2)
	b.add(replay.TypeToolFinished, finished(t, "a-000000000003", "r-000000000003", 0, runtime.Passed, replay.ResultSuccess))
	b.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sid})
	rep := b.fold("")
	acts := rep.Sessions[0].Calls
	if acts[1].Status != replay.CallRetried || acts[1].RetriedBy != "a-000000000003" || acts[2].RetryOf != act2 {
		t.Fatalf("actions = %+v", acts)
	}
	// a second retry of the same action is refused
	b2 := newLog(t, true).started().greet().crashed()
	b2.human(act2, "abandon", "alice", "")
	b2.human(act2, "retry", "alice", "")
	b2.fold(replay.ReasonApprovalBinding)
}

// A call while another action of the live session runs is not ambiguous:
// calls may overlap.
func TestSessionOverlappingCalls(t *testing.T) {
	b := newLog(t, true).started()
	b.request(act, "greet", inHash).policy(act, "allow", 1, "rule-1").start(act, rcpt, "greet", inHash, "allow", owner1)
	b.request(act2, "greet", inHash2).policy(act2, "allow", 1, "rule-1").start(act2, rcpt2, "greet", inHash2, "allow", owner1)
	b.finish(act2, rcpt2).finish(act, rcpt)
	b.fold("")
}
