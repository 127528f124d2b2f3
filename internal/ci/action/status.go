package action

import (
	"context"
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/kernel/replay"
)

// readStatusMode reads input status (status.ParseMode).
func readStatusMode(f *workflow) (string, error) {
	m, err := status.ParseMode(f.input("status"))
	if err != nil {
		return "", fmt.Errorf("input status: %w", err)
	}
	return m, nil
}

// statusSHA is the commit the status is about: the PR head, the merge
// group's head, else GITHUB_SHA.
func (j *job) statusSHA() string {
	if j.ev != nil && j.ev.HeadSHA != "" {
		return j.ev.HeadSHA
	}
	return j.o.Getenv("GITHUB_SHA")
}

// report posts the status for the job's outcome; a failure to post is a
// warning, never the job's failure.
func (j *job) report(ctx context.Context, state, desc string) {
	if j.statusMode == "" || j.statusMode == status.ModeNone || j.gh == nil {
		return
	}
	sha := j.statusSHA()
	if sha == "" {
		return
	}
	err := status.Post(ctx, j.gh, j.statusMode, j.owner, j.name, sha, status.Report{State: state, Description: desc, TargetURL: status.RunURL(j.o.Getenv)})
	var pe *status.PermissionError
	switch {
	case errors.As(err, &pe):
		j.f.annotate("warning", "ProofGate status not posted", pe.Error()+" (or input status: none); the evidence is unaffected")
	case err != nil:
		j.f.annotate("warning", "ProofGate status not posted", "posting the "+status.ModeNoun(j.statusMode)+" failed: "+err.Error())
	default:
		j.res.StatusPosted = state
		j.f.logf("proofgate: %s %s on %s: %s", status.ModeNoun(j.statusMode), state, event.ShortSHA(sha), status.ClipDescription(desc))
	}
}

// reportFinal posts the status of the run's final state.
func (j *job) reportFinal(ctx context.Context) {
	waiting := ""
	if j.c != nil {
		waiting = status.WaitingFor(j.c.Approval)
	}
	if d := j.res.Decision; d != nil && d.Rules != nil {
		if p := d.Rules.Pending(); p != "" {
			waiting = p
		}
	}
	st, desc := status.For(j.res.State, waiting)
	if j.res.State == replay.Complete && j.res.Code != ExitOK {
		st, desc = status.Error, "COMPLETE, but the bundle was not published: see the job summary"
	}
	j.report(ctx, st, desc)
}
