package run

import (
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// DefaultHeartbeat is how often Exec reports a running check when
// ExecOptions.Heartbeat is zero.
const DefaultHeartbeat = 30 * time.Second

// Progress receives what Exec does, as it does it; the kernel prints
// nothing itself. Exec calls it from the goroutines that run checks, so an
// implementation must be safe for concurrent use, and should not block.
type Progress interface {
	// Started: the check began to run; note says what it mounted ("" or,
	// e.g., "caches go-mod:ro@default").
	Started(check, note string)
	// Running: the check has run for elapsed and its stdout and stderr
	// together hold outputBytes (bytes kept under its output cap). Called
	// every ExecOptions.Heartbeat while the check runs.
	Running(check string, elapsed time.Duration, outputBytes int64)
	// Finished: the check ended with outcome after d, or was skipped
	// (outcome skipped, d zero, detail the reason).
	Finished(check string, outcome runtime.Outcome, d time.Duration, detail string)
}

// heartbeat calls p.Running for check every interval until stop is closed.
// The returned channel is closed once it has stopped calling.
func heartbeat(p Progress, check string, interval time.Duration, start time.Time, size func() int64, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				p.Running(check, now.Sub(start), size())
			}
		}
	}()
	return done
}
