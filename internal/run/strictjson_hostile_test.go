package run

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/replay"
)

// withMember returns d's JSON object with one more member: the hostile
// case variant or field a lenient decoder would fold into d.
func withMember(t *testing.T, d any, name string, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m[name] = v
	return m
}

// Event data is canonical JSON (so no duplicate member), but a member that
// differs from a defined field only by case is refused by the replay with
// its path: encoding/json folded "Outcome" into outcome.
func TestReplayRefusesCaseVariantEventData(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		body       func(h *hist)
	}{
		{"check.finished Outcome beside outcome", "Outcome", func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.add(replay.TypeCheckStarted, replay.CheckStartedData{Check: "a"})
			h.add(replay.TypeCheckFinished, withMember(h.t, passA(), "Outcome", "failed"))
			h.results = append(h.results, replay.CheckReport{ID: "a", Outcome: passA().Outcome, Attestation: procAtt})
			h.check(passB())
			h.verify(h.p.Worktree.Digest)
			h.state(replay.Verifying, replay.AwaitingApproval)
		}},
		{"nested structured.Status", "structured.Status", func(h *hist) {
			h.state(replay.Planned, replay.Verifying)
			h.check(passA())
			h.add(replay.TypeCheckStarted, replay.CheckStartedData{Check: "b"})
			d := withMember(h.t, passB(), "x", nil)
			delete(d, "x")
			d["structured"].(map[string]any)["Status"] = "failed"
			h.add(replay.TypeCheckFinished, d)
			b := passB()
			h.results = append(h.results, replay.CheckReport{ID: "b", Outcome: b.Outcome, Attestation: procAtt})
			h.verify(h.p.Worktree.Digest)
			h.state(replay.Verifying, replay.AwaitingApproval)
		}},
		{"state.changed To beside to", "To", func(h *hist) {
			h.add(replay.TypeState, withMember(h.t, replay.StateData{From: replay.Planned, To: replay.Verifying}, "To", string(replay.Complete)))
		}},
		{"approval Actor beside actor", "Actor", func(h *hist) {
			h.verified()
			rep := &replay.Report{RunID: h.l.Binding().Run, ContractHash: h.p.Contract.Hash, Source: h.l.Binding().Source, Checks: h.results}
			d, _ := replay.VerificationDigest(rep)
			h.add(replay.TypeApproval, withMember(h.t, replay.ApprovalData{Decision: "approved", Actor: "alice", State: replay.AwaitingApproval,
				VerificationDigest: d, Contract: h.p.Contract.Hash, Source: replay.Source{Commit: h.p.Worktree.Commit, Tree: h.p.Worktree.Tree}}, "Actor", "bob"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeHostile(t, nil, tc.body)
			_, err := Audit(dir)
			var ae *replay.AuditError
			if !errors.As(err, &ae) || ae.Reason != replay.ReasonBadEvent {
				t.Fatalf("Audit accepted the case-variant member (err %v)", err)
			}
			if !strings.Contains(ae.Detail, tc.path+": ") || !strings.Contains(ae.Detail, "only by case") {
				t.Fatalf("the refusal does not name %s: %v", tc.path, err)
			}
		})
	}
}

// run.json is re-read by reconciliation: a case variant or a duplicate that
// encoding/json resolved to the replayed value must not pass.
func TestProjectionRefusesDuplicateAndCaseVariantMembers(t *testing.T) {
	for _, tc := range []struct{ name, insert, path string }{
		{"State before state", `"State": "AWAITING_APPROVAL",`, "State"},
		{"state twice", `"state": "AWAITING_APPROVAL",`, "state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeHostile(t, nil, func(h *hist) {
				h.verified()
				h.decide("approved", "alice", replay.AwaitingApproval, nil)
				h.decide("approved", "bob", replay.Complete, nil)
				h.state(replay.AwaitingApproval, replay.Complete)
			})
			p := filepath.Join(dir, RunFile)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			orig := `"state": "COMPLETE"`
			if !strings.Contains(string(b), orig) {
				t.Fatalf("run.json has no %s:\n%s", orig, b)
			}
			b = []byte(strings.Replace(string(b), orig, tc.insert+" "+orig, 1))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Audit(dir)
			var ae *replay.AuditError
			if !errors.As(err, &ae) || ae.Reason != replay.ReasonProjection {
				t.Fatalf("Audit accepted run.json with %s (err %v)", tc.insert, err)
			}
			if !strings.Contains(ae.Detail, "run.json: "+tc.path+": ") {
				t.Fatalf("the refusal does not name %s: %v", tc.path, err)
			}
		})
	}
}

// A context file with a duplicate member hashes one reading and records
// another; it is refused with the member's path.
func TestParseContextRefusesDuplicateMembers(t *testing.T) {
	snap := map[string]any{"query": "q", "references": []any{}, "provenance": map[string]any{"tool": "t"}}
	h, err := canon.Digest(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, in, path string }{
		{"top-level duplicate", `{"query":"hidden","query":"q","references":[],"provenance":{"tool":"t"},"snapshot_hash":"` + h + `"}`, "$.query"},
		{"duplicate inside provenance", `[{"query":"q","references":[],"provenance":{"tool":"x","tool":"t"},"snapshot_hash":"` + h + `"}]`, "[0].provenance.tool"},
		{"duplicate inside references", `{"query":"q","references":[{"a":1,"a":2}],"provenance":{"tool":"t"},"snapshot_hash":"` + h + `"}`, "$.references[0].a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseContext("ctx.json", []byte(tc.in))
			var ce *ContextError
			if !errors.As(err, &ce) {
				t.Fatalf("accepted (err %v)", err)
			}
			if ce.Path != tc.path || !strings.Contains(ce.Msg, "duplicate") {
				t.Fatalf("err = %v, want a duplicate at %s", err, tc.path)
			}
		})
	}
}

// A structured report line with two statuses is not a passing report.
func TestStructuredReportRefusesDuplicateStatus(t *testing.T) {
	for _, line := range []string{
		`{"status":"failed","status":"passed","criteria":["c1"]}`,
		`{"Status":"failed","status":"passed","criteria":["c1"]}`,
		`{"status":"passed","criteria":["c1"],"criteria":[]}`,
	} {
		s, found := findReport([]byte("noise\n" + line + "\n"))
		if why := judgeReport(s, found, []string{"c1"}, ""); why == "" {
			t.Errorf("%s: judged a passing report", line)
		}
	}
}
