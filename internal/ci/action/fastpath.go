package action

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
)

// tryFastPath imports the pull_request job's run for a pull_request_review
// event. On success j.r is the imported run, open for writing; otherwise it
// reports why, and the caller re-runs the checks.
func (j *job) tryFastPath(ctx context.Context) bool {
	if j.ev.Name != "pull_request_review" || j.gh == nil {
		return false
	}
	start := time.Now()
	name, err := j.importRun(ctx)
	if err != nil {
		var fe *handoff.Error
		if !errors.As(err, &fe) {
			fe = handoff.Refuse(handoff.GitHubAPI, "%v", err)
		}
		j.res.FastPathRefusal = string(fe.Reason)
		msg := "no trustworthy run of the pull_request job for head " + event.ShortSHA(j.ev.HeadSHA) + " (" + fe.Error() + "): re-running the checks"
		j.s.Notes = append(j.s.Notes, "Review fast path not taken: "+msg+".")
		j.f.annotate("notice", "ProofGate re-runs the checks", msg)
		return false
	}
	took := time.Since(start).Round(time.Millisecond)
	j.res.Imported = true
	j.res.RunID = j.r.ID
	rep := j.r.Report()
	j.s.Report = rep
	j.res.State, j.res.VerificationDigest = rep.State, rep.VerificationDigest
	j.f.output("run-id", j.r.ID)
	j.f.output("verification-digest", rep.VerificationDigest)
	j.s.Notes = append(j.s.Notes, fmt.Sprintf("Review fast path: imported run %s from artifact %s (signature, chain, head %s and base contract verified in %s); the checks were not re-run.",
		jobsummary.Code(j.r.ID), jobsummary.Code(name), jobsummary.Code(event.ShortSHA(j.ev.HeadSHA)), took))
	j.f.logf("proofgate: imported run %s from %s in %s, checks not re-run", j.r.ID, name, took)
	return true
}

// importRun finds, verifies and imports the hand-off (handoff.Importer);
// it returns the artifact's name.
func (j *job) importRun(ctx context.Context) (string, error) {
	var kv *sigstore.Verifiers
	if j.keyless {
		var err error
		if kv, err = j.keylessVerifiers(ctx); err != nil {
			return "", err
		}
	}
	im := handoff.Importer{GH: j.gh, Owner: j.owner, Name: j.name, Signer: j.signer, Keyless: kv, Binding: j.binding(), StateDir: j.stateDir}
	name := RunArtifactPrefix + j.ev.HeadSHA
	r, err := im.Import(ctx, name, j.pr())
	if err != nil {
		return "", err
	}
	j.r = r
	return name, nil
}

// binding is what a run the job imports must be for.
func (j *job) binding() handoff.Binding {
	return handoff.Binding{Repo: j.repo, Contract: j.c, WorkTree: j.ws}
}
