package action

// Sharded runs (issue 17; docs/action.md "Shards"): a mode: plan job, the
// matrix jobs (input shard) and a mode: merge job of one workflow run.
// What they name, sign, select and refuse is internal/ci/shardjob's; the
// jobs below read the inputs, call it, execute or merge the shards with
// internal/shard, upload and report.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Values of input mode.
const (
	ModeRun   = "run"   // plan and execute (with input shard: execute one shard of a planned run)
	ModePlan  = "plan"  // plan a sharded run once and upload it for the shard and merge jobs
	ModeMerge = "merge" // merge the workflow run's shards, then approve, sign and upload
)

// readShardInputs reads inputs mode and shard into in.
func readShardInputs(f *workflow, in *inputs) error {
	in.mode = strings.ToLower(strings.TrimSpace(f.input("mode")))
	switch in.mode {
	case "":
		in.mode = ModeRun
	case ModeRun, ModePlan, ModeMerge:
	default:
		return fmt.Errorf("input mode: %q is not run, plan or merge", in.mode)
	}
	v := strings.TrimSpace(f.input("shard"))
	if v == "" {
		return nil
	}
	if in.mode != ModeRun {
		return fmt.Errorf("input shard: %q is set, but a mode: %s job executes no shard (shard is for the matrix jobs, mode: run)", v, in.mode)
	}
	sp, err := shard.ParseSpec(v)
	if err != nil {
		var se *shard.SpecError
		if errors.As(err, &se) {
			return fmt.Errorf("input shard: %q: %s (want I/N with 1 <= I <= N <= %d, e.g. shard: ${{ matrix.shard }})", v, se.Detail, shard.MaxShards)
		}
		return fmt.Errorf("input shard: %w", err)
	}
	in.shard = &sp
	return nil
}

// runSharded runs a mode: plan job, a shard job (input shard) or a mode:
// merge job. A refusal ends the job with its class's exit code and names
// its shardjob.Reason.
func (j *job) runSharded(ctx context.Context) (int, error) {
	defer func() {
		if j.r != nil {
			j.closeRun()
		}
	}()
	code, err := j.sharded(ctx)
	var se *shardjob.Error
	if errors.As(err, &se) {
		j.res.ShardRefusal = string(se.Reason)
		j.f.output("shard-refusal", string(se.Reason))
		var ae *exit.Error
		if !errors.As(err, &ae) {
			err = exit.Wrap(shardjob.Class(err), err)
		}
	}
	return code, err
}

func (j *job) sharded(ctx context.Context) (int, error) {
	w, err := shardjob.ReadWorkflowRun(j.o.Getenv, j.repo)
	if err != nil {
		return 0, err
	}
	j.wrun = w
	if !j.keyless && j.signer == nil {
		return 0, shardjob.Refuse(shardjob.NoSigner, "", "input signing-key is empty: a sharded run's plan and shards are signed with it and each next job verifies them with it (set it, or signing: keyless)")
	}
	if j.in.mode == ModePlan {
		return j.planShards(ctx)
	}
	if j.gh == nil {
		return 0, shardjob.Refuse(shardjob.NoToken, "", "input github-token is empty: the job lists and downloads its workflow run's artifacts with it (permissions: actions: read)")
	}
	kv, err := j.shardKeyless(ctx)
	if err != nil {
		return 0, err
	}
	if j.in.mode == ModeMerge {
		return j.mergeShards(ctx, kv)
	}
	return j.execShard(ctx, kv)
}

// shardKeyless returns the keyless verifiers of the plan and the shards:
// the Sigstore trusted root at input trusted-root (read from the base
// commit on pull-request and merge-group events, from the checkout
// otherwise) and the job's own OIDC identity. nil in key mode.
func (j *job) shardKeyless(ctx context.Context) (*sigstore.Verifiers, error) {
	if !j.keyless {
		return nil, nil
	}
	path := j.in.trustedRoot
	if path == "" {
		return nil, shardjob.Refuse(shardjob.NoSigner, "", "input trusted-root is empty: a keyless sharded run's plan and shards are verified against that Sigstore trusted root")
	}
	if !event.CleanRel(path) {
		return nil, usage("input trusted-root: %q is not a clean path relative to the repository root", path)
	}
	var root []byte
	var err error
	if (j.ev.IsPullRequest() || j.ev.MergeGroup != nil) && j.ev.BaseSHA != "" {
		root, err = event.ContractAt(ctx, j.ws, j.gh, j.owner, j.name, j.ev.BaseSHA, path)
	} else {
		root, err = bounded.ReadFile(filepath.Join(j.ws, filepath.FromSlash(path)), sigstore.MaxTrustedRootSize)
	}
	if err != nil {
		return nil, shardjob.Refuse(shardjob.NoSigner, "", "trusted root %s: %v", path, err)
	}
	c, err := j.ownClaims(ctx)
	if err != nil {
		return nil, shardjob.Refuse(shardjob.NoSigner, "", "the job's own OIDC identity: %v", err)
	}
	return shardjob.KeylessVerifiers(root, path, c)
}
