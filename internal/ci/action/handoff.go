package action

import (
	"context"
	"fmt"

	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
)

// The run hand-off (ADR 0018, docs/SPEC.md "Run hand-off artifact"): the
// pull_request job uploads its verified AWAITING_APPROVAL run, sealed and
// signed by internal/ci/handoff, as artifact RunArtifactPrefix+<PR head>;
// the review job finds, opens and imports it (fastpath.go).

// RunArtifactPrefix starts the hand-off artifact's name.
const RunArtifactPrefix = "proofgate-run-"

// pr is the pull request the job's run is for, as a hand-off names it.
func (j *job) pr() handoff.PR {
	return handoff.PR{Number: j.ev.PR, HeadSHA: j.ev.HeadSHA, BaseSHA: j.ev.BaseSHA}
}

// handoff uploads the job's AWAITING_APPROVAL run for the review job. A
// failure is a warning: the review job then re-runs the checks.
func (j *job) handoff(ctx context.Context) {
	if j.ev.Name != "pull_request" || j.ev.Fork || (!j.keyless && j.signer == nil) {
		return
	}
	keyID, sign, err := j.handoffSigner(ctx)
	if err == nil {
		var data []byte
		if data, err = handoff.Export(j.r.Dir, j.pr(), keyID, sign); err == nil {
			j.uploadHandoff(ctx, data)
			return
		}
	}
	j.f.annotate("warning", "ProofGate run hand-off", "the run was not handed off to the review job (it will re-run the checks): "+err.Error())
}

// uploadHandoff uploads the signed hand-off archive as the run artifact.
func (j *job) uploadHandoff(ctx context.Context, data []byte) {
	tok, results := j.o.Getenv("ACTIONS_RUNTIME_TOKEN"), j.o.Getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		return
	}
	name := RunArtifactPrefix + j.ev.HeadSHA
	if _, err := uploadArtifact(ctx, j.f, tok, results, name, map[string][]byte{j.r.ID + handoff.ArchiveSuffix: data}); err != nil {
		j.f.annotate("warning", "ProofGate run hand-off", "uploading "+name+" failed (the review job will re-run the checks): "+err.Error())
		return
	}
	j.f.output("run-artifact", name)
	j.s.Notes = append(j.s.Notes, fmt.Sprintf("The verified run was handed off as artifact %s: a review of this head completes it without re-running the checks.", jobsummary.Code(name)))
}
