package action

import (
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
)

// summary collects what the job summary shows (jobsummary.Run); render
// writes it once, at the end, whatever path the action took.
type summary struct {
	repo         string
	event        *event.Context
	origin       string
	contract     *contract.Resolved
	report       *replay.Report
	decision     *review.Decision
	notes        []string
	pending      string
	failure      string
	export       *bundle.ExportResult
	bundleSHA256 string
	signer       string // keyless: the certificate's identity
	artifactName string
	artifactID   int64
}

func (s *summary) render() string {
	return jobsummary.Run{Repo: s.repo, Event: s.event, Origin: s.origin, Contract: s.contract, Report: s.report,
		Decision: s.decision, Notes: s.notes, Pending: s.pending, Failure: s.failure, Export: s.export,
		BundleSHA256: s.bundleSHA256, Signer: s.signer, ArtifactName: s.artifactName, ArtifactID: s.artifactID}.Markdown()
}

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

// cell and code are jobsummary.Cell and Code for the notes and the verify
// summary.
func cell(s string) string { return jobsummary.Cell(s) }
func code(s string) string { return jobsummary.Code(s) }
