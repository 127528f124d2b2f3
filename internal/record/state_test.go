package record

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

var (
	repoA = checkpoint.Repository{Root: strings.Repeat("a1", 20), ID: "acme/widgets"}
	repoB = checkpoint.Repository{Root: strings.Repeat("b2", 20), ID: "other/repo"}
	// t0 is after every event the tests write: a state checkpoint is
	// not signed before the events it covers.
	t0 = time.Now().UTC().Truncate(time.Second).Add(time.Hour)
)

// mkRun writes a real run directory (contract.json and a chained log of n
// events bound to it) into stateDir.
func mkRun(t *testing.T, stateDir, id string, n int, tag string) string {
	t.Helper()
	dir := run.NewStore(stateDir).Path(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cb := []byte(`{"name":"t"}`)
	if err := os.WriteFile(filepath.Join(dir, run.ContractFile), cb, 0o644); err != nil {
		t.Fatal(err)
	}
	b := eventlog.Binding{Run: id, Contract: canon.SumBytes(cb), Source: eventlog.Source{Commit: strings.Repeat("c", 40), Tree: strings.Repeat("d", 40)}}
	l, err := eventlog.Create(filepath.Join(dir, run.EventsFile), b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append("test.event", map[string]any{"i": i, "tag": tag, "pad": strings.Repeat("x", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runID(i int) string { return fmt.Sprintf("20261201T1200%02d.000Z-%08x", i, i+0xab00) }

func stateWith(t *testing.T, runs int) string {
	t.Helper()
	state := t.TempDir()
	for i := range runs {
		mkRun(t, state, runID(i), 5+i, "orig")
	}
	return state
}

func trustOf(t *testing.T, pub []byte) *trust.Store {
	st := trust.New()
	if _, err := st.Add(pub, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	return st
}

func stateReason(t *testing.T, err error) (checkpoint.Reason, string) {
	t.Helper()
	var se *checkpoint.StateError
	var ce *checkpoint.Error
	switch {
	case errors.As(err, &se):
		return se.Reason, se.Run
	case errors.As(err, &ce):
		return ce.Reason, ""
	}
	t.Fatalf("not a checkpoint refusal: %v", err)
	return "", ""
}

func TestStateCheckpointRoundTrip(t *testing.T) {
	k := keytest.New(t)
	state := stateWith(t, 3)
	rec, err := State(state, repoA, k.Signer, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Runs) != 3 || rec.Runs[0].Run != runID(0) || rec.Runs[2].Length != 7 {
		t.Fatalf("runs %+v", rec.Runs)
	}
	if b, err := os.ReadFile(rec.Path); err != nil || !bytes.Equal(b, rec.Envelope) || filepath.Dir(rec.Path) != filepath.Join(state, "runs", ".state-checkpoints") {
		t.Fatalf("file %s: %v", rec.Path, err)
	}
	rep, err := VerifyState(state, rec.Envelope, trustOf(t, k.PubPEM), repoA)
	if err != nil || len(rep.Uncovered) != 0 || rep.KeyID != k.Signer.KeyID() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	// runs that grew or came after it are not refusals
	mkRun(t, state, runID(9), 2, "later")
	l, _ := eventlog.Open(filepath.Join(run.NewStore(state).Path(runID(1)), run.EventsFile))
	l.Append("test.more", nil)
	l.Close()
	rep, err = VerifyState(state, rec.Envelope, trustOf(t, k.PubPEM), repoA)
	if err != nil || len(rep.Uncovered) != 1 || rep.Uncovered[0] != runID(9) {
		t.Fatalf("after growth: %+v %v", rep, err)
	}
}

func TestStateCheckpointHostile(t *testing.T) {
	k := keytest.New(t)
	cases := map[string]struct {
		tamper func(t *testing.T, state string) checkpoint.Repository
		reason checkpoint.Reason
		run    string
	}{
		"deleted run": {func(t *testing.T, state string) checkpoint.Repository {
			os.RemoveAll(run.NewStore(state).Path(runID(1)))
			return repoA
		}, checkpoint.RunMissing, runID(1)},
		"truncated run": {func(t *testing.T, state string) checkpoint.Repository {
			p := filepath.Join(run.NewStore(state).Path(runID(2)), run.EventsFile)
			b, _ := os.ReadFile(p)
			ls := bytes.SplitAfter(b, []byte{'\n'})
			os.WriteFile(p, bytes.Join(ls[:len(ls)-3], nil), 0o644)
			os.Remove(filepath.Join(filepath.Dir(p), eventlog.HeadFile))
			return repoA
		}, checkpoint.Truncated, runID(2)},
		"rewritten run (a new valid chain of the same run)": {func(t *testing.T, state string) checkpoint.Repository {
			dir := run.NewStore(state).Path(runID(0))
			os.RemoveAll(dir)
			mkRun(t, state, runID(0), 9, "forged")
			return repoA
		}, checkpoint.Rewritten, runID(0)},
		"edited line": {func(t *testing.T, state string) checkpoint.Repository {
			p := filepath.Join(run.NewStore(state).Path(runID(1)), run.EventsFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"tag":"orig"`), []byte(`"tag":"evil"`), 1), 0o644)
			return repoA
		}, checkpoint.ChainRefused, runID(1)},
		"verified in another repository": {func(t *testing.T, state string) checkpoint.Repository {
			return repoB
		}, checkpoint.ForeignRepository, ""},
		"a fork: same root commit, other repository id": {func(t *testing.T, state string) checkpoint.Repository {
			return checkpoint.Repository{Root: repoA.Root, ID: "fork/widgets"}
		}, checkpoint.ForeignRepository, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			state := stateWith(t, 3)
			rec, err := State(state, repoA, k.Signer, t0)
			if err != nil {
				t.Fatal(err)
			}
			repo := c.tamper(t, state)
			_, err = VerifyState(state, rec.Envelope, trustOf(t, k.PubPEM), repo)
			if reason, r := stateReason(t, err); reason != c.reason || r != c.run {
				t.Fatalf("got %s (run %q): %v; want %s (run %q)", reason, r, err, c.reason, c.run)
			}
		})
	}
}

// A whole state directory copied from another repository, presented with
// its own (validly signed) checkpoint, is refused: the checkpoint binds
// the other repository.
func TestStateDirectorySubstituted(t *testing.T) {
	k := keytest.New(t)
	theirs := stateWith(t, 2)
	rec, err := State(theirs, repoB, k.Signer, t0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyState(theirs, rec.Envelope, trustOf(t, k.PubPEM), repoA)
	if reason, _ := stateReason(t, err); reason != checkpoint.ForeignRepository {
		t.Fatalf("%v", err)
	}
	// and our own checkpoint does not match their directory either
	ours := stateWith(t, 2)
	mine, _ := State(ours, repoA, k.Signer, t0)
	_, err = VerifyState(theirs, mine.Envelope, trustOf(t, k.PubPEM), repoA)
	if reason, _ := stateReason(t, err); reason != checkpoint.Rewritten && reason != checkpoint.RunMissing {
		t.Fatalf("ours against theirs: %v", err)
	}
}

func TestStateCheckpointEnvelope(t *testing.T) {
	k, other := keytest.New(t), keytest.New(t)
	state := stateWith(t, 2)
	rec, _ := State(state, repoA, k.Signer, t0)
	if _, err := VerifyState(state, rec.Envelope, trustOf(t, other.PubPEM), repoA); !isReason(err, checkpoint.Invalid) {
		t.Fatalf("untrusted key: %v", err)
	}
	forged := bytes.Replace(rec.Envelope, []byte(`"payload":"`), []byte(`"payload":"A`), 1)
	if _, err := VerifyState(state, forged, trustOf(t, k.PubPEM), repoA); !isReason(err, checkpoint.Invalid) {
		t.Fatalf("forged payload: %v", err)
	}
	// a per-run checkpoint is not a state checkpoint
	c := checkpoint.Checkpoint{V: 1, Run: runID(0), Length: 1, Head: rec.Runs[0].Head, Time: rec.Time}
	env, _ := checkpoint.Sign(k.Signer, c)
	if _, err := VerifyState(state, env, trustOf(t, k.PubPEM), repoA); !isReason(err, checkpoint.Invalid) {
		t.Fatalf("per-run checkpoint accepted: %v", err)
	}
	if _, err := checkpoint.StatePayload(checkpoint.State{V: 1, Repository: repoA, Time: rec.Time,
		Runs: []checkpoint.StateRun{rec.Runs[1], rec.Runs[0]}}); err == nil {
		t.Fatal("unordered runs signed")
	}
}

func isReason(err error, r checkpoint.Reason) bool {
	var ce *checkpoint.Error
	return errors.As(err, &ce) && ce.Reason == r
}

// Signing refuses a state whose chains do not all verify; sealed segments
// are read whole, and a deleted one is a refused chain naming the file.
func TestStateCheckpointSegments(t *testing.T) {
	t.Setenv(eventlog.SegmentSizeEnv, "1KiB")
	k := keytest.New(t)
	state := t.TempDir()
	dir := mkRun(t, state, runID(0), 40, "seg")
	mkRun(t, state, runID(1), 3, "small")
	rec, err := State(state, repoA, k.Signer, t0)
	if err != nil || rec.Runs[0].Length != 40 {
		t.Fatalf("%+v %v", rec, err)
	}
	os.Remove(filepath.Join(dir, "events.00000002.ndjson"))
	_, err = VerifyState(state, rec.Envelope, trustOf(t, k.PubPEM), repoA)
	var ce *eventlog.ChainError
	if reason, r := stateReason(t, err); reason != checkpoint.ChainRefused || r != runID(0) || !errors.As(err, &ce) || ce.Reason != eventlog.SegmentGap {
		t.Fatalf("%v", err)
	}
	if _, err := State(state, repoA, k.Signer, t0.Add(time.Second)); !errors.As(err, &ce) {
		t.Fatalf("signed over a broken chain: %v", err)
	}
}

// A log whose active file ends in an incomplete line (a live writer's
// append in flight, or a killed writer's) is signed at the complete
// events before it and reported; the checkpoint verifies once the line is
// complete, or gone. A torn line that is not at the end, or an edited
// complete line, still refuses.
func TestStateCheckpointTornTail(t *testing.T) {
	k := keytest.New(t)
	state := stateWith(t, 2)
	p := filepath.Join(run.NewStore(state).Path(runID(1)), run.EventsFile)
	clean, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	whole := bytes.SplitAfter(clean, []byte{'\n'})
	last := whole[len(whole)-2] // the last complete line (SplitAfter ends with "")
	// the log as it is while the writer has written half of one more line
	if err := os.WriteFile(p, append(bytes.Clone(clean[:len(clean)-len(last)]), last[:len(last)/2]...), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := State(state, repoA, k.Signer, t0)
	if err != nil {
		t.Fatalf("checkpoint beside an append in flight: %v", err)
	}
	if len(rec.TornTail) != 1 || rec.TornTail[0] != runID(1) || rec.Runs[1].Length != 5 {
		t.Fatalf("torn %v, runs %+v: want run 1 signed at 5 of its 6 events", rec.TornTail, rec.Runs)
	}
	if err := os.WriteFile(p, clean, 0o644); err != nil { // the append completed
		t.Fatal(err)
	}
	if _, err := VerifyState(state, rec.Envelope, trustOf(t, k.PubPEM), repoA); err != nil {
		t.Fatalf("verify after the append completed: %v", err)
	}
	// an edited complete line before a torn tail still refuses
	bad := bytes.Replace(clean[:len(clean)-len(last)], []byte(`"tag":"orig"`), []byte(`"tag":"evil"`), 1)
	if err := os.WriteFile(p, append(bad, last[:len(last)/2]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := State(state, repoA, k.Signer, t0.Add(time.Second)); err == nil {
		t.Fatal("a checkpoint signed over an edited line")
	} else if reason, r := stateReason(t, err); reason != checkpoint.ChainRefused || r != runID(1) {
		t.Fatalf("edited line: %s %s", reason, r)
	}
	// a log that is nothing but a torn line has no event to sign
	if err := os.WriteFile(p, whole[0][:len(whole[0])/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := State(state, repoA, k.Signer, t0.Add(2*time.Second)); err == nil {
		t.Fatal("a checkpoint over a log with no complete event")
	}
}
