package run

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

func evidenceReport(t *testing.T, collection, limitation string) replay.EvidenceReport {
	t.Helper()
	argv := []string{"/bin/true"}
	h, _ := canon.Digest(argv)
	outcome, exit := replay.EvidenceExited, 0
	if limitation != "" {
		outcome, exit = limitation, -1
	}
	empty := canon.SumBytes(nil)
	return replay.EvidenceReport{V: 1, Collection: collection, ID: "probe", Claim: "c", Allowlist: empty, EntryHash: empty,
		ArgvHash: h, Argv: argv, Cwd: "/", Env: []string{}, TimeoutSeconds: 1, OutputLimitBytes: 1,
		Outcome: outcome, Limitation: limitation, ExitCode: exit,
		Stdout: replay.EvidenceStream{File: "probe.stdout", Digest: empty}, Stderr: replay.EvidenceStream{File: "probe.stderr", Digest: empty}}
}

func withEvent(t *testing.T, events []eventlog.Event, typ string, data any) []eventlog.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	e := last
	e.Seq, e.Type, e.Data = last.Seq+1, typ, b
	return append(append([]eventlog.Event{}, events...), e)
}

// The replay, not only internal/evidence, refuses evidence events that do
// not fit: a verdict other than unable-to-check on a collection with a
// limitation, a verdict on a collection the log does not record or with
// another report digest, two verdicts, a collection recorded twice, a
// report whose digest or argv hash is not its own, an observation
// without artifact.
func TestReplayRefusesForgedEvidence(t *testing.T) {
	f := newFixture(t, twoChecks)
	id := f.awaiting(t)
	dir := NewStore(f.state).Path(id)
	base, err := ReadLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := f.c
	const col = "20261201T000000.000Z-0000aaaa"
	timeout := evidenceReport(t, col, replay.EvidenceTimeout)
	td, _ := canon.Digest(timeout)
	collected := withEvent(t, base, replay.TypeEvidenceCollected, replay.EvidenceCollectedData{Digest: td, Report: timeout})
	if _, err := replay.Fold(c, collected); err != nil {
		t.Fatalf("a well-formed collection: %v", err)
	}
	verdict := func(v, lim string) replay.EvidenceVerdict {
		return replay.EvidenceVerdict{V: 1, Collection: col, ID: "probe", Report: td, Verdict: v, Reason: "r", Actor: "a", Time: "2026-12-01T00:00:00Z", Limitation: lim}
	}
	ok := withEvent(t, collected, replay.TypeEvidenceVerdict, verdict("unable-to-check", "timeout"))
	if _, err := replay.Fold(c, ok); err != nil {
		t.Fatalf("unable-to-check: %v", err)
	}
	badDigest := timeout
	badDigest.ExitCode = 0
	badArgv := evidenceReport(t, col, "")
	badArgv.ArgvHash = td
	bd, _ := canon.Digest(badArgv)
	other := verdict("unable-to-check", "timeout")
	other.Collection = "20261201T000000.000Z-0000bbbb"
	wrongReport := verdict("unable-to-check", "timeout")
	wrongReport.Report = canon.SumBytes([]byte("x"))
	noArtifact := verdict("unable-to-check", "timeout")
	noArtifact.Observations = []replay.Observation{{Tool: "browser", Target: "t"}}
	for name, events := range map[string][]eventlog.Event{
		"confirmed despite a timeout":  withEvent(t, collected, replay.TypeEvidenceVerdict, verdict("confirmed", "timeout")),
		"limitation dropped":           withEvent(t, collected, replay.TypeEvidenceVerdict, verdict("confirmed", "")),
		"unknown collection":           withEvent(t, collected, replay.TypeEvidenceVerdict, other),
		"other report":                 withEvent(t, collected, replay.TypeEvidenceVerdict, wrongReport),
		"observation without artifact": withEvent(t, collected, replay.TypeEvidenceVerdict, noArtifact),
		"two verdicts":                 withEvent(t, ok, replay.TypeEvidenceVerdict, verdict("unable-to-check", "timeout")),
		"collected twice":              withEvent(t, collected, replay.TypeEvidenceCollected, replay.EvidenceCollectedData{Digest: td, Report: timeout}),
		"digest not the report's":      withEvent(t, base, replay.TypeEvidenceCollected, replay.EvidenceCollectedData{Digest: td, Report: badDigest}),
		"argv hash not argv's":         withEvent(t, base, replay.TypeEvidenceCollected, replay.EvidenceCollectedData{Digest: bd, Report: badArgv}),
		"unknown member":               withEvent(t, base, replay.TypeEvidenceCollected, map[string]any{"digest": td, "report": timeout, "extra": 1}),
	} {
		_, err := replay.Fold(c, events)
		var ae *replay.AuditError
		if !errors.As(err, &ae) || ae.Reason != replay.ReasonBadEvent || !strings.Contains(ae.Error(), "evidence") {
			t.Errorf("%s: %v, want a bad-event AuditError", name, err)
		}
	}
}
