package runtime

import (
	"context"
	"time"
)

// Fail records that the check could not be run (or its result cannot be
// trusted): Outcome Error, ExitCode -1, detail, Finished now. It returns the
// Result so a provider can write `return res.Fail(...)`.
func (r *Result) Fail(detail string) Result {
	r.Outcome = Error
	r.ExitCode = -1
	r.Detail = detail
	r.Finished = time.Now().UTC()
	return *r
}

// Limit is one of the limits every provider enforces on a running check.
type Limit int

// Limits, as Supervise reports them.
const (
	LimitTimeout Limit = iota + 1 // the spec's Timeout passed
	LimitStdout                   // stdout went over its cap
	LimitStderr                   // stderr went over its cap
	LimitCancel                   // the caller's context was cancelled
)

// Supervise is the loop a provider runs while its check runs. It hands the
// provider's own events (the check's exit, the end of a stream, the
// provider's timers) to handle until handle reports that supervision is
// over, and calls hit once for each limit the check reaches: timeout (0 =
// none), an overflow of either Capture, cancellation of ctx. Each limit is
// reported at most once; what hit does about it (which signal, which
// detail, whether a later limit still counts) is the provider's. handle and
// hit run on the caller's goroutine, so they share the provider's state
// without locks. The limit channels are selected directly, together with
// events, so the first thing to happen while the loop waits is the first
// thing it sees.
func Supervise[E any](ctx context.Context, timeout time.Duration, stdout, stderr *Capture,
	events <-chan E, handle func(E) (over bool), hit func(Limit)) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	outFull, errFull, done := stdout.Full(), stderr.Full(), ctx.Done()
	for {
		select {
		case e := <-events:
			if handle(e) {
				return
			}
		case <-expired:
			expired = nil
			hit(LimitTimeout)
		case <-outFull:
			outFull = nil
			hit(LimitStdout)
		case <-errFull:
			errFull = nil
			hit(LimitStderr)
		case <-done:
			done = nil
			hit(LimitCancel)
		}
	}
}
