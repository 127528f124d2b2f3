package action

import (
	"context"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
)

// mergeShards is the mode: merge job: import the plan, take the run's
// shards, merge them (internal/shard verifies each), then decide as an
// unsharded run does.
func (j *job) mergeShards(ctx context.Context, kv *sigstore.Verifiers) (int, error) {
	j.report(ctx, status.Pending, "merging the shards of the sharded run")
	arts, err := j.importPlan(ctx, kv)
	if err != nil {
		return 0, err
	}
	id := j.r.ID
	j.closeRun() // shard.Merge opens the run itself
	dirs, names, remove, err := shardjob.DownloadShards(ctx, j.gh, j.owner, j.name, arts, j.wrun)
	if err != nil {
		return 0, err
	}
	defer remove()
	v, err := shardjob.Verifier(j.signer, kv)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	mr, err := shard.Merge(ctx, j.stateDir, id, dirs, shard.MergeOptions{Verifier: v})
	if err != nil {
		return 0, shardjob.MergeRefusal(err, names)
	}
	r, err := run.Open(j.stateDir, id)
	if err != nil {
		return 0, environment("open the merged run: %w", err)
	}
	j.r, j.closed = r, false
	rep := r.Report()
	j.s.Report = rep
	j.res.State, j.res.VerificationDigest = rep.State, rep.VerificationDigest
	showChecks(j.f, r.Dir, rep)
	if rep.VerificationDigest != "" {
		j.f.output("verification-digest", rep.VerificationDigest)
	}
	j.s.Notes = append(j.s.Notes, fmt.Sprintf("Sharded run: %d shards of workflow run %d attempt %d merged (%d checks, each shard's signature, chain and binding verified) in %s.",
		mr.Shards, j.wrun.ID, j.wrun.Attempt, mr.Checks, time.Since(start).Round(time.Millisecond)))
	j.f.logf("proofgate: merged %d shards (%d checks) into run %s: %s", mr.Shards, mr.Checks, id, rep.State)
	return j.decide(ctx)
}
