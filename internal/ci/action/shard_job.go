package action

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/progress"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Bounds of a shard directory the shard job uploads.
const (
	maxShardFiles = 900 // under artifact.MaxEntries, which the merge job's Unzip enforces
)

// runSharded runs a mode: plan job, a shard job (input shard) or a mode:
// merge job. A refusal ends the job with its class's exit code and names
// its ShardReason.
func (j *job) runSharded(ctx context.Context) (int, error) {
	defer func() {
		if j.r != nil {
			j.closeRun()
		}
	}()
	code, err := j.sharded(ctx)
	var se *ShardError
	if errors.As(err, &se) {
		j.res.ShardRefusal = string(se.Reason)
		j.f.output("shard-refusal", string(se.Reason))
		var ae *Error
		if !errors.As(err, &ae) {
			err = exit.Wrap(shardClass(err), err)
		}
	}
	return code, err
}

func (j *job) sharded(ctx context.Context) (int, error) {
	w, err := readWorkflowRun(j.o.Getenv)
	if err != nil {
		return 0, err
	}
	j.wrun = w
	if !j.keyless && j.signer == nil {
		return 0, shardRefuse(ShardNoSigner, "", "input signing-key is empty: a sharded run's plan and shards are signed with it and each next job verifies them with it (set it, or signing: keyless)")
	}
	if j.in.mode == ModePlan {
		return j.planShards(ctx)
	}
	if j.gh == nil {
		return 0, shardRefuse(ShardNoToken, "", "input github-token is empty: the job lists and downloads its workflow run's artifacts with it (permissions: actions: read)")
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

// execShard is a matrix job: import the plan, execute shard I/N, sign the
// shard directory and upload it.
func (j *job) execShard(ctx context.Context, kv *sigstore.Verifiers) (int, error) {
	j.statusMode = status.ModeNone // the merge job reports the run's state
	sp := *j.in.shard
	tok, results := j.o.Getenv("ACTIONS_RUNTIME_TOKEN"), j.o.Getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		return 0, shardRefuse(ShardNoArtifacts, "", "ACTIONS_RUNTIME_TOKEN or ACTIONS_RESULTS_URL is missing: shard %s cannot be uploaded for the merge job", sp)
	}
	if err := j.importPlan(ctx, kv); err != nil {
		return 0, err
	}
	j.s.report = j.r.Report()
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
	files, err := readShardDir(dir)
	if err != nil {
		return 0, environment("shard directory: %w", err)
	}
	name := ShardArtifactName(j.wrun.ID, j.wrun.Attempt, sp)
	if _, err := uploadArtifact(ctx, j.f, tok, results, name, files); err != nil {
		return 0, shardRefuse(ShardNoArtifacts, name, "upload: %v", err)
	}
	j.f.output("shard-artifact", name)
	j.s.notes = append(j.s.notes, fmt.Sprintf("Shard %s of run %s: %d check(s) executed (%s), %d failed; log head %s (%d events); uploaded, signed, as artifact %s for the merge job.",
		sp, code(id), len(res.Checks), code(strings.Join(res.Checks, ", ")), res.Failed, code(res.Head), res.Length, code(name)))
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

// readShardDir returns the shard directory's regular files by slash path.
func readShardDir(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		if len(files) >= maxShardFiles {
			return fmt.Errorf("more than %d files", maxShardFiles)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := bounded.ReadFile(p, MaxShardArtifactBytes)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	return files, err
}

// shardKeyless returns the keyless verifiers of the plan and the shards:
// the Sigstore trusted root at input trusted-root (read from the base
// commit on pull-request and merge-group events, from the checkout
// otherwise) and the job's own OIDC identity, which every job of the
// workflow run shares (same workflow file, ref and commit). nil in key
// mode.
func (j *job) shardKeyless(ctx context.Context) (*sigstore.Verifiers, error) {
	if !j.keyless {
		return nil, nil
	}
	path := j.in.trustedRoot
	if path == "" {
		return nil, shardRefuse(ShardNoSigner, "", "input trusted-root is empty: a keyless sharded run's plan and shards are verified against that Sigstore trusted root")
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
		return nil, shardRefuse(ShardNoSigner, "", "trusted root %s: %v", path, err)
	}
	c, err := j.ownClaims(ctx)
	if err != nil {
		return nil, shardRefuse(ShardNoSigner, "", "the job's own OIDC identity: %v", err)
	}
	id := sigstore.Identity{Name: "the job's own identity", Issuer: c.Issuer, SignerWorkflow: c.JobWorkflowRef,
		SourceRepo: c.Repository, SourceRef: c.Ref, SourceDigest: c.SHA}
	v, err := sigstore.NewVerifiers(root, []sigstore.Identity{id})
	if err != nil {
		return nil, shardRefuse(ShardNoSigner, "", "trusted root %s: %v", path, err)
	}
	return v, nil
}

// shardVerifier verifies shard signatures with the job's own signer
// identity: its key, or (kv) the trusted root and its OIDC identity.
func (j *job) shardVerifier(kv *sigstore.Verifiers) (shard.Verifier, error) {
	if kv != nil {
		return &bundle.ShardVerifier{Keyless: kv}, nil
	}
	ks, ok := j.signer.(*key.Signer)
	if !ok {
		return nil, shardRefuse(ShardNoSigner, "", "the signer is not an Ed25519 key")
	}
	return &bundle.ShardVerifier{Keys: handoff.KeyVerifiers{ID: ks.KeyID(), Pub: ks.Public}}, nil
}
