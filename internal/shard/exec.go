package shard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Files of a shard directory (docs/SPEC.md "Shards").
const (
	ManifestFile  = replay.ShardManifestFile  // shard.json
	SignatureFile = replay.ShardSignatureFile // shard.sig
	MaterialFile  = replay.ShardMaterialFile  // shard.sigstore.json
	LogFile       = run.EventsFile            // events.ndjson, the shard log
	BlobDir       = run.BlobDir               // blobs/sha256/<hex>
	// LockFile is held while Exec writes the directory; Merge refuses a
	// directory whose lock is held (or without shard.json) as running.
	LockFile = "shard.lock"
)

// OutError refuses a shard directory Exec may not write.
type OutError struct {
	Dir    string
	Detail string
}

func (e *OutError) Error() string { return fmt.Sprintf("--out %s: %s", e.Dir, e.Detail) }

// Exec executes the shard's checks of planned run id in stateDir and writes
// a self-contained shard directory to opts.Out (refused if it exists and is
// not empty): the shard log, the check output blobs and, last, shard.json.
// The run in stateDir is not changed (it stays PLANNED); it must be on the
// commit, tree and work tree it was planned on (a *run.StaleError
// otherwise). Signing the directory is the caller's (bundle.SignShard).
func Exec(ctx context.Context, stateDir, id string, opts ExecOptions) (*Result, error) {
	if err := opts.Spec.check(); err != nil {
		return nil, &SpecError{Value: opts.Spec.String(), Detail: err.Error()}
	}
	out, lk, err := claimOut(opts.Out)
	if err != nil {
		return nil, err
	}
	defer lk.Release()
	r, err := run.Open(stateDir, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if st := r.State(); st != replay.Planned {
		return nil, &run.StateError{State: st, Action: "execute a shard of"}
	}
	assigned, err := Assign(r.Contract.Checks, opts.Spec.Count)
	if err != nil {
		return nil, err
	}
	checks := assigned[opts.Spec.Index-1]
	if pickChecks != nil {
		checks = pickChecks(assigned, opts.Spec)
	}
	ro := opts.Run
	if ro.StateDir == "" {
		ro.StateDir = stateDir
	}
	x := &executor{r: r, out: out, spec: opts.Spec, checks: checks, opts: ro, outcomes: map[string]runtime.Outcome{}}
	if err := x.run(ctx); err != nil {
		return nil, err
	}
	return x.result(), nil
}

// pickChecks, when set (tests only), replaces a shard's assigned checks:
// the hostile tests execute shards no honest executor would.
var pickChecks func(assigned [][]string, s Spec) []string

// claimOut creates the shard directory (or takes an empty one) and its lock.
func claimOut(dir string) (string, *lock.Lock, error) {
	if dir == "" {
		return "", nil, &OutError{Dir: dir, Detail: "no shard directory given"}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, &OutError{Dir: dir, Detail: err.Error()}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", nil, &OutError{Dir: dir, Detail: err.Error()}
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return "", nil, &OutError{Dir: dir, Detail: err.Error()}
	}
	if len(ents) > 0 {
		return "", nil, &OutError{Dir: dir, Detail: "exists and is not empty (a shard directory is written once)"}
	}
	lk, err := lock.Acquire(filepath.Join(abs, LockFile))
	if err != nil {
		return "", nil, &OutError{Dir: dir, Detail: err.Error()}
	}
	return abs, lk, nil
}

// executor writes one shard directory.
type executor struct {
	r      *run.Run
	out    string
	spec   Spec
	checks []string
	opts   run.ExecOptions
	log    *eventlog.Log

	mu       sync.Mutex
	outcomes map[string]runtime.Outcome
	manifest replay.ShardManifest
}

func (x *executor) run(ctx context.Context) error {
	b, n, head := x.r.PlannedRef()
	ws, rel, err := run.InspectWorktree(ctx, x.opts.RepoDir, x.opts.StateDir, x.out)
	if err != nil {
		return err
	}
	if why := staleReasons(x.r.Planned.Worktree, ws); len(why) > 0 {
		return &run.StaleError{Reasons: why}
	}
	x.log, err = eventlog.Create(filepath.Join(x.out, LogFile), replay.ShardBinding(b, x.spec.Index, x.spec.Count))
	if err != nil {
		return err
	}
	defer x.log.Close()
	planned := replay.ChainRef{Length: n, Head: head}
	if _, err := x.log.Append(replay.TypeShardOpened, replay.ShardOpenedData{Shard: x.spec.Index, Of: x.spec.Count,
		Checks: x.checks, Planned: planned, Worktree: ws, Executor: run.Version}); err != nil {
		return err
	}
	budgetHit, err := x.r.ExecSubset(ctx, x.opts, run.SubsetOptions{Checks: x.checks, BlobDir: filepath.Join(x.out, BlobDir), Record: x.record, Exclude: rel})
	if err != nil {
		return err
	}
	end, _, err := run.InspectWorktree(ctx, x.opts.RepoDir, x.opts.StateDir, x.out)
	if err != nil {
		return err
	}
	if _, err := x.log.Append(replay.TypeShardClosed, replay.ShardClosedData{Checks: len(x.outcomes), Failed: x.failed(), BudgetExceeded: budgetHit, Worktree: end}); err != nil {
		return err
	}
	x.manifest = replay.ShardManifest{V: 1, Run: b.Run, Contract: b.Contract, Source: b.Source, Shard: x.spec.Index, Of: x.spec.Count,
		Checks: x.checks, Planned: planned, Log: replay.ChainRef{Length: x.log.Len(), Head: x.log.Head()}, Finished: time.Now().UTC().Format(time.RFC3339Nano)}
	return x.writeManifest()
}

// record appends a check event to the shard log, noting outcomes.
func (x *executor) record(typ string, data any) error {
	if d, ok := data.(replay.CheckFinishedData); ok {
		x.mu.Lock()
		x.outcomes[d.Check] = d.Outcome
		x.mu.Unlock()
	}
	_, err := x.log.Append(typ, data)
	return err
}

func (x *executor) failed() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, o := range x.outcomes {
		if o != runtime.Passed {
			n++
		}
	}
	return n
}

// writeManifest writes shard.json last: its presence says the directory
// is complete.
func (x *executor) writeManifest() error {
	sum, err := bounded.SHA256File(filepath.Join(x.out, LogFile))
	if err != nil {
		return err
	}
	x.manifest.Events = sum
	if x.manifest.Blobs, err = listBlobs(filepath.Join(x.out, BlobDir)); err != nil {
		return err
	}
	b, err := canon.Marshal(&x.manifest)
	if err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(x.out, ManifestFile), b, 0o444)
}

func (x *executor) result() *Result {
	return &Result{Dir: x.out, Spec: x.spec, Checks: x.checks, Head: x.manifest.Log.Head, Length: x.manifest.Log.Length, Failed: x.failed()}
}

// listBlobs lists the digests of the blobs under dir, sorted.
func listBlobs(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "sha256"))
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, e := range ents {
		if d := "sha256:" + e.Name(); blob.ValidDigest(d) && e.Type().IsRegular() {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}

// staleReasons compares the planned work tree with the observed one.
func staleReasons(planned, now replay.WorktreeState) []string {
	var r []string
	if now.Commit != planned.Commit {
		r = append(r, fmt.Sprintf("HEAD is %.12s, the run was planned on %.12s", now.Commit, planned.Commit))
	} else if now.Tree != planned.Tree {
		r = append(r, "the commit's tree differs")
	}
	if now.Digest != planned.Digest {
		what := "the work tree differs from the planned one"
		if len(now.Changes) > 0 {
			what += " (" + strings.Join(now.Changes[:min(len(now.Changes), 5)], ", ") + ")"
		}
		r = append(r, what)
	}
	return r
}
