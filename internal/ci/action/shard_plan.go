package action

import (
	"context"
	"fmt"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/run"
)

// planShards is a mode: plan job: plan once, sign, upload.
func (j *job) planShards(ctx context.Context) (int, error) {
	tok, results := j.o.Getenv("ACTIONS_RUNTIME_TOKEN"), j.o.Getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		return 0, shardjob.Refuse(shardjob.NoArtifacts, "", "ACTIONS_RUNTIME_TOKEN or ACTIONS_RESULTS_URL is missing: the planned run cannot be uploaded for the shard jobs")
	}
	j.report(ctx, status.Pending, "sharded run planned; its shard jobs run the checks")
	// The shard jobs post nothing; the merge job reports the run's state.
	j.statusMode = status.ModeNone
	if err := j.plan(ctx); err != nil {
		return 0, err
	}
	defer j.closeRun()
	rep := j.r.Report()
	j.s.Report = rep
	j.res.State = rep.State
	j.f.output("state", string(rep.State))
	keyID, sign, err := j.handoffSigner(ctx)
	if err != nil {
		return 0, err
	}
	w := j.wrun
	data, err := shardjob.PackPlan(j.r.Dir, w, keyID, sign)
	if err != nil {
		return 0, environment("pack the planned run: %w", err)
	}
	name := shardjob.PlanArtifactName(w.ID, w.Attempt)
	if _, err := uploadArtifact(ctx, j.f, tok, results, name, map[string][]byte{j.r.ID + handoff.ArchiveSuffix: data}); err != nil {
		return 0, shardjob.Refuse(shardjob.NoArtifacts, name, "upload: %v", err)
	}
	j.f.output("plan-artifact", name)
	j.s.Notes = append(j.s.Notes, fmt.Sprintf("Sharded run planned: run %s (%d checks) uploaded, signed, as artifact %s for the shard jobs of workflow run %d, attempt %d.",
		jobsummary.Code(j.r.ID), len(j.c.Checks), jobsummary.Code(name), w.ID, w.Attempt))
	return ExitOK, nil
}

// importPlan fetches and verifies the plan job's run, binds it to this
// job's contract and checkout and installs it, and returns the workflow
// run's listed artifacts; j.r is then the planned run, open.
func (j *job) importPlan(ctx context.Context, kv *sigstore.Verifiers) ([]*artifact.Artifact, error) {
	p, err := shardjob.FetchPlan(ctx, j.gh, j.owner, j.name, j.wrun, j.signer, kv)
	if err != nil {
		return nil, err
	}
	r := p.Statement.Predicate.Run
	err = j.binding().Check(ctx, r, "the run was planned under contract %s, this job resolved %s",
		"the run was planned for commit %s, the checkout is %s")
	var installed *run.Run
	if err == nil {
		installed, err = handoff.Install(j.stateDir, r.RunID, p.Files)
	}
	if err != nil {
		return nil, shardjob.RefusePlan(p.Artifact, err)
	}
	j.r = installed
	j.res.RunID = j.r.ID
	j.f.output("run-id", j.r.ID)
	j.f.logf("proofgate: imported planned run %s from %s (signature, chain, workflow run, contract and commit verified)", j.r.ID, p.Artifact)
	return p.Listed, nil
}
