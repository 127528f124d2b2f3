package app

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/internal/evidence"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// allowlist writes an allowlist of one command, hi, outside any
// repository.
func allowlist(t *testing.T) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"version": 1, "commands": map[string]any{"hi": map[string]any{
		"argv": []string{"/bin/sh", "-c", "echo hi"}, "cwd": t.TempDir(), "env": map[string]string{"PATH": "/usr/bin:/bin"},
		"timeout_seconds": 10, "output_limit_bytes": 1024}}})
	p := filepath.Join(t.TempDir(), "allowlist.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A collection for a run is chained into its log, and so is the verdict
// on it; a second verdict, extra arguments and a collection id with
// nowhere to find it are refused.
func TestCollectAndVerdict(t *testing.T) {
	state, r := executed(t)
	r.Close()
	repo := filepath.Dir(state)
	o := CollectOptions{State: state, Allowlist: allowlist(t), Repo: repo, ID: "hi", Claim: "it says hi", Run: "latest"}
	col, err := Collect(context.Background(), o)
	if err != nil || col.Run != r.ID || col.Report.ExitCode != 0 || filepath.Dir(col.Dir) != filepath.Join(r.Dir, "evidence") {
		t.Fatalf("collect %+v, %v", col, err)
	}
	v := VerdictOptions{State: state, Collection: col.Report.Collection, Run: r.ID, Verdict: "confirmed", Reason: "it did", Actor: "alice"}
	j, err := Verdict(v)
	if err != nil || j.Run != r.ID || j.Record.Verdict != "confirmed" {
		t.Fatalf("verdict %+v, %v", j, err)
	}
	ev, err := run.ReadLog(r.Dir)
	if err != nil || ev[len(ev)-2].Type != replay.TypeEvidenceCollected || ev[len(ev)-1].Type != replay.TypeEvidenceVerdict {
		t.Fatalf("the log does not end in the collection and its verdict: %v", err)
	}
	if _, err := Verdict(v); err == nil {
		t.Fatal("a second verdict was recorded")
	}
	o.Args = []string{"more"}
	var ae *evidence.AllowlistError
	if _, err := Collect(context.Background(), o); !errors.As(err, &ae) || ae.Reason != evidence.ReasonExtraArgs {
		t.Fatalf("extra arguments: %v", err)
	}
	v.Run = ""
	if _, err := Verdict(v); class(err) != exit.Usage {
		t.Fatalf("an id without --dir or --run: %v", err)
	}
}
