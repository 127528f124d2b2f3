package session_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

func progressOf(t *testing.T, evs []eventlog.Event, action string) (progress []replay.ToolProgressData, started, finished int) {
	t.Helper()
	for i, e := range evs {
		var head struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(e.Data, &head)
		if head.Action != action {
			continue
		}
		switch e.Type {
		case replay.TypeToolStarted:
			started = i
		case replay.TypeToolFinished:
			finished = i
		case replay.TypeToolProgress:
			var d replay.ToolProgressData
			if err := strictjson.Decode(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if started == 0 || finished != 0 {
				t.Fatalf("tool.progress at line %d outside started %d .. finished %d", i, started, finished)
			}
			progress = append(progress, d)
		}
	}
	return progress, started, finished
}

// A call that runs about 600 ms with a 100 ms interval leaves durable
// checkpoints between its tool.started and tool.finished: seq 1, 2, …,
// each naming a stored snapshot whose stdout digest is that of a prefix of
// the call's final stdout; the replay accepts the run. A fast call, or a
// session with checkpoints off, leaves none.
func TestProgressCheckpoints(t *testing.T) {
	f := newFixture(t)
	o := f.opts("agent-1")
	o.ProgressEvery = 100 * time.Millisecond
	s, err := session.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, s, "slow", `{}`)
	began := time.Now()
	fast := call(t, s, "greet", `{"name":"quick"}`)
	fastTook := time.Since(began)
	if res.Result != replay.ResultSuccess || fast.Result != replay.ResultSuccess {
		t.Fatalf("slow %+v, greet %+v", res, fast)
	}
	evs := f.events(t)
	ps, _, _ := progressOf(t, evs, res.Action)
	if len(ps) < 3 {
		t.Fatalf("%d checkpoints of a 600 ms call at 100 ms, want ≥ 3", len(ps))
	}
	bs := blob.New(filepath.Join(f.dir(), run.BlobDir))
	var last session.Snapshot
	for i, p := range ps {
		if p.Seq != i+1 || p.Receipt == "" {
			t.Fatalf("checkpoint %d: %+v", i, p)
		}
		path, err := bs.Path(p.Snapshot)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("snapshot blob %s: %v", p.Snapshot, err)
		}
		var snap session.Snapshot
		if err := strictjson.Decode(raw, &snap); err != nil {
			t.Fatalf("snapshot %s: %v", p.Snapshot, err)
		}
		if snap.ElapsedMS <= last.ElapsedMS || snap.Stdout.Size < last.Stdout.Size || snap.Stdout.Size > int64(len(res.Stdout)) {
			t.Fatalf("snapshot %d %+v after %+v (final stdout %d bytes)", i, snap, last, len(res.Stdout))
		}
		h := sha256.Sum256(res.Stdout[:snap.Stdout.Size])
		if want := "sha256:" + hex.EncodeToString(h[:]); snap.Stdout.Digest != want {
			t.Fatalf("snapshot %d stdout digest %s, the final stdout's prefix of %d bytes is %s", i, snap.Stdout.Digest, snap.Stdout.Size, want)
		}
		last = snap
	}
	if last.Stdout.Size == 0 || bytes.Count(res.Stdout, []byte("\n")) != 12 {
		t.Fatalf("the checkpoints saw no output (%+v) or the tool did not run through (%q)", last, res.Stdout)
	}
	// A call records no checkpoint before its first interval has passed:
	// at most one per whole interval the call took (none for a call that
	// ends within 100 ms; a loaded machine may stretch the fast call).
	if fps, _, _ := progressOf(t, evs, fast.Action); len(fps) > int(fastTook/o.ProgressEvery) {
		t.Fatalf("a call of %v has %d checkpoints at %v", fastTook, len(fps), o.ProgressEvery)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	rep := f.audit(t)
	for _, p := range ps {
		if !slices.Contains(rep.Blobs, p.Snapshot) {
			t.Fatalf("snapshot %s is not in the report's blobs (the bundle would miss it)", p.Snapshot)
		}
	}

	off := newFixture(t)
	o = off.opts("agent-1")
	o.ProgressEvery = -1
	s, err = session.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	res = call(t, s, "slow", `{}`)
	if ps, _, _ := progressOf(t, off.events(t), res.Action); len(ps) != 0 || res.Result != replay.ResultSuccess {
		t.Fatalf("checkpoints off: %d of them, result %s", len(ps), res.Result)
	}
}

// A tool.progress after the call's tool.finished is refused: by the
// recorder's run before it is written, and, forged into the chain behind
// its back, by every reader's replay (receipt).
func TestProgressAfterFinishRefused(t *testing.T) {
	f := newFixture(t)
	o := f.opts("agent-1")
	o.ProgressEvery = 100 * time.Millisecond
	s, err := session.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, s, "slow", `{}`)
	ps, _, _ := progressOf(t, f.events(t), res.Action)
	if len(ps) == 0 {
		t.Fatal("no checkpoint to forge after")
	}
	forged := ps[len(ps)-1]
	forged.Seq++
	r, err := run.Open(f.state, f.id)
	if err != nil {
		t.Fatal(err)
	}
	_, aerr := r.AppendSession(replay.TypeToolProgress, forged)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !replay.IsReason(aerr, replay.ReasonReceipt) {
		t.Fatalf("progress after finish through the run: %v, want a receipt refusal", aerr)
	}
	lg, err := eventlog.Open(filepath.Join(f.dir(), "events.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Append(replay.TypeToolProgress, forged); err != nil {
		t.Fatal(err)
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := run.VerifyLog(f.dir()); err != nil {
		t.Fatalf("the forged line is chain-valid, yet: %v", err)
	}
	if _, err := run.Audit(f.dir()); !replay.IsReason(err, replay.ReasonReceipt) {
		t.Fatalf("audit of a progress after finish: %v, want a receipt refusal", err)
	}
}
