package session

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Progress records (tool.progress). While a tool runs longer than
// Options.ProgressEvery, the recorder records, once per interval, a
// durable progress record of the call: a snapshot blob, the canonical JSON
//
//	{"elapsed_ms":N,"stderr":{"digest","size","truncated"?},"stdout":{…}}
//
// (what each stream had produced so far: its size and the digest of that
// prefix), then tool.progress naming it, seq 1, 2, … in one lock hold. It
// is evidence that the call was alive and how far it had got, not a live
// feed: at most MaxProgress per call, none after the tool exited, and a
// progress record that cannot be recorded (the lock busy past LockWait, a full
// disk) is skipped, never retried out of order. tool.finished waits for a
// progress record in flight, so none follows it (the replay refuses one that
// does).

// DefaultProgressEvery is the progress interval when Options leave it 0.
const DefaultProgressEvery = 30 * time.Second

// MinProgressEvery bounds the interval from below.
const MinProgressEvery = 10 * time.Millisecond

// MaxProgress bounds the progress records of one call.
const MaxProgress = 1000

// Snapshot is the content of a tool.progress snapshot blob.
type Snapshot struct {
	ElapsedMS int64          `json:"elapsed_ms"`
	Stdout    runtime.Stream `json:"stdout"`
	Stderr    runtime.Stream `json:"stderr"`
}

func (s *Session) progressEvery() time.Duration {
	switch e := s.o.ProgressEvery; {
	case e < 0:
		return 0 // off
	case e == 0:
		return DefaultProgressEvery
	case e < MinProgressEvery:
		return MinProgressEvery
	default:
		return e
	}
}

// recordProgress records the admitted call's progress until the returned stop is
// called; stop returns once no progress record is in flight.
func (j *admitted) recordProgress(s *Session, stdout, stderr *runtime.Capture) (stop func()) {
	every := s.progressEvery()
	if every == 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		began := time.Now()
		for seq := 1; seq <= MaxProgress; {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			snap := Snapshot{ElapsedMS: time.Since(began).Milliseconds(), Stdout: stdout.Stream(), Stderr: stderr.Stream()}
			if j.recordSnapshot(s, seq, snap) == nil {
				seq++
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// recordSnapshot stores snap and records tool.progress seq naming it.
func (j *admitted) recordSnapshot(s *Session, seq int, snap Snapshot) error {
	b, err := canon.Marshal(snap)
	if err != nil {
		return err
	}
	h := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(h[:])
	if _, err := j.blobs.PutMany([]string{d}, [][]byte{b}); err != nil {
		return err
	}
	return s.hold(func(r *run.Run) error {
		_, err := r.AppendSession(replay.TypeToolProgress, replay.ToolProgressData{Call: j.id, Receipt: j.receipt, Seq: seq, Snapshot: d})
		return err
	})
}
