package action

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/progress"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/exit"
)

// execShard is a matrix job: import the plan, execute shard I/N, sign the
// shard directory and upload it.
func (j *job) execShard(ctx context.Context, kv *sigstore.Verifiers) (int, error) {
	j.statusMode = status.ModeNone // the merge job reports the run's state
	sp := *j.in.shard
	tok, results := j.o.Getenv("ACTIONS_RUNTIME_TOKEN"), j.o.Getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		return 0, shardjob.Refuse(shardjob.NoArtifacts, "", "ACTIONS_RUNTIME_TOKEN or ACTIONS_RESULTS_URL is missing: shard %s cannot be uploaded for the merge job", sp)
	}
	if _, err := j.importPlan(ctx, kv); err != nil {
		return 0, err
	}
	j.s.Report = j.r.Report()
	id := j.r.ID
	j.closeRun() // shard.Exec opens the run itself
	tmp, err := os.MkdirTemp("", "proofgate-shard-")
	if err != nil {
		return 0, environment("shard directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "shard")
	res, err := j.runShard(ctx, id, sp, dir)
	if err != nil {
		return 0, err
	}
	if err := j.signShard(ctx, dir); err != nil {
		return 0, err
	}
	files, err := shardjob.ReadShard(dir)
	if err != nil {
		return 0, environment("shard directory: %w", err)
	}
	name := shardjob.ShardArtifactName(j.wrun.ID, j.wrun.Attempt, sp)
	if _, err := uploadArtifact(ctx, j.f, tok, results, name, files); err != nil {
		return 0, shardjob.Refuse(shardjob.NoArtifacts, name, "upload: %v", err)
	}
	j.f.output("shard-artifact", name)
	j.s.Notes = append(j.s.Notes, fmt.Sprintf("Shard %s of run %s: %d check(s) executed (%s), %d failed; log head %s (%d events); uploaded, signed, as artifact %s for the merge job.",
		sp, jobsummary.Code(id), len(res.Checks), jobsummary.Code(strings.Join(res.Checks, ", ")), res.Failed, jobsummary.Code(res.Head), res.Length, jobsummary.Code(name)))
	if res.Failed > 0 {
		return j.failed("ProofGate shard "+sp.String(), exit.Refused, fmt.Sprintf("%d check(s) of shard %s failed: the merge job blocks the run", res.Failed, sp)), nil
	}
	return ExitOK, nil
}

// runShard executes shard sp of run id into dir with the contract's
// runtimes.
func (j *job) runShard(ctx context.Context, id string, sp shard.Spec, dir string) (*shard.Result, error) {
	hb, err := progress.Heartbeat(j.o.Getenv)
	if err != nil {
		return nil, usage("%w", err)
	}
	caches, err := j.cacheStore()
	if err != nil {
		return nil, err
	}
	rts, unavailable, closeRts := j.o.Runtimes(ctx, j.c)
	defer closeRts()
	res, err := shard.Exec(ctx, j.stateDir, id, shard.ExecOptions{Spec: sp, Out: dir, Run: run.ExecOptions{
		RepoDir: j.ws, StateDir: j.stateDir, Runtimes: rts, Unavailable: unavailable, Jobs: j.in.jobs,
		Progress: progress.NewText(j.o.Stdout), Heartbeat: hb, Caches: caches}})
	if err != nil {
		if c, ok := exit.Of(err); ok {
			return nil, exit.Wrap(c, fmt.Errorf("execute shard %s: %w", sp, err))
		}
		return nil, environment("execute shard %s: %w", sp, err)
	}
	j.f.logf("proofgate: shard %s of run %s: %d checks, %d failed, log head %s", sp, id, len(res.Checks), res.Failed, res.Head)
	return res, nil
}

// signShard signs the shard directory with the job's signer: the key, or
// an ephemeral key Fulcio certifies for the job's OIDC token.
func (j *job) signShard(ctx context.Context, dir string) error {
	if !j.keyless {
		if err := bundle.SignShardContext(ctx, dir, j.signer); err != nil {
			return environment("sign the shard: %w", err)
		}
		return nil
	}
	ms, err := j.keylessSigner(ctx)
	if err != nil {
		return err
	}
	if err := bundle.SignShardWith(ctx, dir, ms); err != nil {
		return environment("sign the shard (keyless): %w", err)
	}
	return nil
}
