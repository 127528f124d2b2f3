package main

import (
	"io"
	"os"
	"time"

	"github.com/proofgate/proofgate/internal/progress"
	"github.com/proofgate/proofgate/internal/run"
)

// textProgress prints a run's progress to w (stderr), or nothing when w is
// nil (--quiet).
func textProgress(w io.Writer) run.Progress { return progress.NewText(w) }

// heartbeat is the interval of the "running" lines (PROOFGATE_HEARTBEAT).
func heartbeat() (time.Duration, error) {
	d, err := progress.Heartbeat(os.Getenv)
	if err != nil {
		return 0, usageErr(err)
	}
	return d, nil
}
