package action

import (
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/kernel/replay"
)

// showChecks prints each check's output in a ::group:: and an ::error
// annotation for each check that did not pass.
func showChecks(f *workflow, runDir string, rep *replay.Report) {
	jobsummary.Checks(jobLog{f}, runDir, rep)
}

// jobLog is the job log as jobsummary.Checks writes to it.
type jobLog struct{ f *workflow }

func (l jobLog) Group(title string)                { l.f.group(title) }
func (l jobLog) EndGroup()                         { l.f.endGroup() }
func (l jobLog) Logf(format string, args ...any)   { l.f.logf(format, args...) }
func (l jobLog) Verbatim(text string)              { l.f.verbatim(text) }
func (l jobLog) Annotate(level, title, msg string) { l.f.annotate(level, title, msg) }
