package app

import (
	"context"
	"errors"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ShardOptions say which shard of a planned run to execute, where to
// write it and how to sign it.
type ShardOptions struct {
	// Spec is the shard (I/N); Out its directory (new or empty).
	Spec shard.Spec
	Out  string
	// Exec runs the checks: repository, state directory, runtimes, jobs,
	// progress, heartbeat, caches.
	Exec run.ExecOptions
	// Key signs the shard directory; Keyless (set instead) with an
	// ephemeral key Fulcio certifies.
	Key     envelope.Signer
	Keyless envelope.MaterialSigner
}

// ExecShard executes shard o.Spec of the planned run id of o.Exec's state
// directory into o.Out (shard.Exec) and signs the directory. The shard
// package's errors are returned as they are (a bad spec or directory, a
// refused shard); a failed signature is the environment's.
func ExecShard(ctx context.Context, id string, o ShardOptions) (*shard.Result, error) {
	if (o.Key == nil) == (o.Keyless == nil) {
		return nil, errors.New("exec shard: exactly one of a key and a keyless signer")
	}
	res, err := shard.Exec(ctx, o.Exec.StateDir, id, shard.ExecOptions{Spec: o.Spec, Out: o.Out, Run: o.Exec})
	if err != nil {
		return nil, err
	}
	if o.Keyless != nil {
		err = bundle.SignShardWith(ctx, res.Dir, o.Keyless)
	} else {
		err = bundle.SignShardContext(ctx, res.Dir, o.Key)
	}
	if err != nil {
		return nil, exit.Wrap(exit.Environment, err)
	}
	return res, nil
}

// Merged is a merge's result: the shards and checks merged, and the run
// as it then stands.
type Merged struct {
	*shard.MergeResult
	Report *replay.Report
	Stale  *run.StaleInfo
}

// Merge verifies the shard directories dirs of the planned run id of the
// state directory with v and appends them to it (shard.Merge), then reads
// the run back. Errors are returned as they are (a refused merge is a
// *shard.MergeError).
func Merge(ctx context.Context, state, id string, dirs []string, v *bundle.ShardVerifier) (*Merged, error) {
	res, err := shard.Merge(ctx, state, id, dirs, shard.MergeOptions{Verifier: v})
	if err != nil {
		return nil, err
	}
	r, err := run.Open(state, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return &Merged{MergeResult: res, Report: r.Report(), Stale: r.Stale()}, nil
}
