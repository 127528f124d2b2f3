// Package progress prints a run's progress (run.Progress) as text lines,
// for `proofgate run`/`exec` (to stderr) and the GitHub Action (to the
// job log). One line per event:
//
//	start   <check>
//	running <check padded to 20> <elapsed>, <n> bytes of output
//	<outcome padded to 7> <check padded to 20> <duration>[  <detail>]
//	skipped <check padded to 20> <reason>
//
// Elapsed times under a minute are rounded to 0.1 s, longer ones to the
// second. The heartbeat interval comes from PROOFGATE_HEARTBEAT (a Go
// duration between MinHeartbeat and MaxHeartbeat), default 30 s.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// EnvHeartbeat names the environment variable that sets the interval.
const EnvHeartbeat = "PROOFGATE_HEARTBEAT"

// Bounds of the heartbeat interval: often enough to show life in a CI log
// (at least every 30 s), rarely enough not to flood it.
const (
	MinHeartbeat = 100 * time.Millisecond
	MaxHeartbeat = run.DefaultHeartbeat
)

// Text writes progress lines to W. It is safe for concurrent use.
type Text struct {
	mu sync.Mutex
	w  io.Writer
}

// NewText returns a Text writing to w, or nil (no progress) when w is nil.
func NewText(w io.Writer) run.Progress {
	if w == nil {
		return nil
	}
	return &Text{w: w}
}

func (t *Text) printf(format string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, format+"\n", a...)
}

// Started implements run.Progress.
func (t *Text) Started(check, note string) {
	if note != "" {
		note = "  " + note
	}
	t.printf("start   %s%s", check, note)
}

// Running implements run.Progress.
func (t *Text) Running(check string, elapsed time.Duration, outputBytes int64) {
	t.printf("running %-20s %s, %d bytes of output", check, round(elapsed), outputBytes)
}

// Finished implements run.Progress.
func (t *Text) Finished(check string, outcome runtime.Outcome, d time.Duration, detail string) {
	if outcome == runtime.Skipped && d == 0 {
		t.printf("skipped %-20s %s", check, detail)
		return
	}
	line := fmt.Sprintf("%-7s %-20s %s", outcome, check, d)
	if detail != "" {
		line += "  " + detail
	}
	t.printf("%s", line)
}

func round(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// IntervalError is a PROOFGATE_HEARTBEAT value that is not a duration in
// [MinHeartbeat, MaxHeartbeat].
type IntervalError struct{ Value string }

func (e *IntervalError) Error() string {
	return fmt.Sprintf("%s=%q: want a duration from %s to %s (e.g. 10s)", EnvHeartbeat, e.Value, MinHeartbeat, MaxHeartbeat)
}

// Heartbeat reads the interval from getenv (PROOFGATE_HEARTBEAT); unset
// means run.DefaultHeartbeat.
func Heartbeat(getenv func(string) string) (time.Duration, error) {
	v := getenv(EnvHeartbeat)
	if v == "" {
		return run.DefaultHeartbeat, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < MinHeartbeat || d > MaxHeartbeat {
		return 0, &IntervalError{Value: v}
	}
	return d, nil
}
