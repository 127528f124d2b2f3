package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// The run side of shards (internal/shard decides what a shard executes and
// whether shards merge; ADR 0026): ExecSubset runs some checks of a
// PLANNED run into another log, and MergeShards appends verified shards'
// results to the run's own log.

// SubsetOptions say which checks ExecSubset runs and where their results go.
type SubsetOptions struct {
	// Checks are the check ids to run; every dependency of one is among them.
	Checks []string
	// BlobDir is the blob store their output goes to.
	BlobDir string
	// Record appends one event to the log the results go to.
	Record func(typ string, data any) error
	// Exclude are more paths (relative to the repository) the workspace
	// copy leaves out, e.g. the shard directory when it is inside.
	Exclude []string
}

// ExecSubset runs the checks so.Checks of a PLANNED run (in parallel up to
// opts.Jobs, in dependency order, within the contract's budget) and
// records check.started and check.finished (and budget.exceeded when the
// budget ran out, then budgetHit) through so.Record. The run itself, its
// log and its state, are not changed.
func (r *Run) ExecSubset(ctx context.Context, opts ExecOptions, so SubsetOptions) (budgetHit bool, err error) {
	if st := r.State(); st != replay.Planned {
		return false, &StateError{State: st, Action: "execute a shard of"}
	}
	checks, err := subset(r.Contract, so.Checks)
	if err != nil {
		return false, err
	}
	jobs := max(opts.Jobs, 1)
	runCtx := ctx
	var cancel context.CancelFunc = func() {}
	budget := time.Duration(r.Contract.Budget.MaxDuration)
	if budget > 0 {
		runCtx, cancel = context.WithTimeout(ctx, budget)
	}
	defer cancel()
	s := r.newScheduler(runCtx, opts, jobs, checks, blob.New(so.BlobDir), so.Record)
	s.exclude = so.Exclude
	s.runAll()
	if err := s.firstErr(); err != nil {
		return false, err
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("run %s interrupted: %w", r.ID, ctx.Err())
	}
	if budget > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return true, so.Record(replay.TypeBudget, replay.BudgetData{MaxDurationMS: budget.Milliseconds()})
	}
	return false, nil
}

// subset returns the checks ids names, in contract order, refusing an
// unknown or repeated id and a dependency outside the subset.
func subset(c *contract.Resolved, ids []string) ([]contract.Check, error) {
	in := map[string]bool{}
	for _, id := range ids {
		if _, ok := c.Check(id); !ok || in[id] {
			return nil, fmt.Errorf("shard: check %q is not in the contract or named twice", id)
		}
		in[id] = true
	}
	var out []contract.Check
	for _, ch := range c.Checks {
		if !in[ch.ID] {
			continue
		}
		for _, d := range ch.DependsOn {
			if !in[d] {
				return nil, fmt.Errorf("shard: check %q depends on %q, which this shard does not run", ch.ID, d)
			}
		}
		out = append(out, ch)
	}
	return out, nil
}

// InspectWorktree observes the repository's work tree as Plan does,
// leaving out the state directory's runs/ and the paths exclude (absolute
// or relative to the working directory) that lie inside the repository.
// It returns the state and the excluded paths relative to the repository.
func InspectWorktree(ctx context.Context, repoDir, stateDir string, exclude ...string) (replay.WorktreeState, []string, error) {
	st, err := inspect(ctx, repoDir, stateDir)
	if len(exclude) == 0 || err != nil {
		return replay.WorktreeState(st), nil, err
	}
	root, err := source.Root(ctx, repoDir)
	if err != nil {
		return replay.WorktreeState{}, nil, err
	}
	ex := stateExclude(root, stateDir)
	var rel []string
	for _, p := range exclude {
		rel = append(rel, pathExclude(root, p)...)
	}
	st, err = source.Inspect(ctx, repoDir, append(ex, rel...)...)
	return replay.WorktreeState(st), rel, err
}

// pathExclude is p relative to dir when it lies inside dir.
func pathExclude(dir, p string) []string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil
	}
	realRoot, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	realAbs, err := evalPrefix(abs)
	if err != nil {
		return nil
	}
	rel, err := filepath.Rel(realRoot, realAbs)
	if err != nil || !filepath.IsLocal(rel) {
		return nil
	}
	return []string{filepath.ToSlash(rel)}
}

// MergedShard is one verified shard MergeShards appends to the run.
type MergedShard struct {
	// Record is the shard.merged data.
	Record replay.ShardMergedData
	// Events are the shard log's check events, copied in order.
	Events []eventlog.Event
	// BlobDir holds the blobs Blobs (each re-hashed as it is copied).
	BlobDir string
	Blobs   []string
	// Files are stored under shards/<i>/ by name (the shard log, the
	// manifest, the signature files).
	Files          map[string][]byte
	BudgetExceeded bool
	// Worktree is the work tree the shard saw when it closed.
	Worktree replay.WorktreeState
}

// MergeShards appends verified shards to a PLANNED run (or one a killed
// merge left VERIFYING with nothing recorded, CanMerge): their blobs and
// files are stored, the run moves to VERIFYING, each shard's check events
// are appended followed by its shard.merged, and the verification
// concludes as Exec's does (STALE when a shard saw another work tree,
// BLOCKED, AWAITING_APPROVAL or COMPLETE). The replay refuses anything
// but every check exactly once, by exactly one shard of 1..N.
func (r *Run) MergeShards(shards []MergedShard) error {
	resume, err := r.CanMerge()
	if err != nil {
		return err
	}
	if err := r.storeShards(shards); err != nil {
		return err
	}
	batch, err := r.mergedEvents(shards, resume)
	if err != nil {
		return err
	}
	if !resume {
		if err := r.transition(replay.Verifying, replay.StateData{}); err != nil {
			return err
		}
	}
	if err := r.stageAll(batch); err != nil {
		return err
	}
	budgetHit := false
	for _, sh := range shards {
		budgetHit = budgetHit || sh.BudgetExceeded
	}
	if budgetHit {
		if err := r.append(replay.TypeBudget, replay.BudgetData{MaxDurationMS: time.Duration(r.Contract.Budget.MaxDuration).Milliseconds()}); err != nil {
			return err
		}
	}
	return r.concludeMerged(shards, budgetHit)
}

// pending is one event MergeShards appends.
type pending struct {
	typ  string
	data json.RawMessage
}

// mergedEvents builds the shards' events (each shard's check events, then
// its shard.merged) and replays them, after the run's log and a move to
// VERIFYING, on a scratch folder: nothing is staged that the replay
// refuses (a staged event is written by Close).
func (r *Run) mergedEvents(shards []MergedShard, resume bool) ([]pending, error) {
	var batch []pending
	for _, sh := range shards {
		for _, e := range sh.Events {
			batch = append(batch, pending{e.Type, e.Data})
		}
		d, err := canon.Marshal(sh.Record)
		if err != nil {
			return nil, err
		}
		batch = append(batch, pending{replay.TypeShardMerged, d})
	}
	r.mu.Lock()
	events := r.log.Events()
	r.mu.Unlock()
	f := replay.NewFolder(r.Contract)
	for i, e := range events {
		if err := f.Apply(i+1, e); err != nil {
			return nil, err
		}
	}
	b := r.log.Binding()
	scratch := func(typ string, data []byte) eventlog.Event {
		return eventlog.Event{V: 1, Run: b.Run, Source: b.Source, Contract: b.Contract, Type: typ, Data: data}
	}
	sd, err := canon.Marshal(replay.StateData{From: replay.Planned, To: replay.Verifying})
	if err != nil {
		return nil, err
	}
	line := len(events) + 1
	if !resume {
		if err := f.Apply(line, scratch(replay.TypeState, sd)); err != nil {
			return nil, err
		}
		line++
	}
	for i, p := range batch {
		if err := f.Apply(line+i, scratch(p.typ, p.data)); err != nil {
			return nil, fmt.Errorf("merge: the shards' events do not replay: %w", err)
		}
	}
	return batch, nil
}

// stageAll appends batch with one write and one fsync (eventlog Stage and
// Flush), then writes the projection once.
func (r *Run) stageAll(batch []pending) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range batch {
		e, err := r.log.Stage(p.typ, p.data)
		if err != nil {
			return err
		}
		if err := r.fold.Apply(r.log.Len(), e); err != nil {
			return fmt.Errorf("kernel staged an event it cannot replay: %w", err)
		}
	}
	if err := r.log.Flush(); err != nil {
		return err
	}
	return r.writeProjectionLocked()
}

// CanMerge refuses a run shards may not be merged into (*StateError): it
// must be PLANNED, or VERIFYING with nothing recorded since (a merge killed
// after its state change: resume is then true, and the merge continues
// without a second state change).
func (r *Run) CanMerge() (resume bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch st := r.fold.State(); {
	case st == replay.Planned:
		return false, nil
	case r.fold.Untouched():
		return true, nil
	default:
		return false, &StateError{State: st, Action: "merge shards into"}
	}
}

// storeShards copies the shards' blobs into the run's store and their
// files into shards/<i>/ (replacing what an interrupted merge left: no
// event names it yet).
func (r *Run) storeShards(shards []MergedShard) error {
	root := filepath.Join(r.Dir, replay.ShardDir)
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	for _, sh := range shards {
		if err := copyBlobs(r.blobs, blob.New(sh.BlobDir), sh.Blobs); err != nil {
			return fmt.Errorf("merge shard %d: %w", sh.Record.Shard, err)
		}
		dir := filepath.Join(root, strconv.Itoa(sh.Record.Shard))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		for name, b := range sh.Files {
			if err := durable.WriteFile(filepath.Join(dir, name), b, 0o444); err != nil {
				return fmt.Errorf("merge: %w", err)
			}
		}
	}
	return nil
}

// maxBlobBatch bounds the bytes copyBlobs holds for one PutMany (one
// directory fsync for the batch); a larger blob is streamed on its own.
const maxBlobBatch = 32 << 20

// copyBlobs copies the blobs ds from src into dst, each re-hashed.
func copyBlobs(dst, src *blob.Store, ds []string) error {
	var (
		digests []string
		bs      [][]byte
		held    int64
	)
	flush := func() error {
		_, err := dst.PutMany(digests, bs)
		digests, bs, held = digests[:0], bs[:0], 0
		return err
	}
	for _, d := range ds {
		p, err := src.Path(d)
		if err != nil {
			return err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Size() > maxBlobBatch/4 {
			if err := copyBlob(dst, src, d); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if held+int64(len(b)) > maxBlobBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		digests, bs, held = append(digests, d), append(bs, b), held+int64(len(b))
	}
	return flush()
}

// copyBlob copies blob d from src into dst, re-hashed.
func copyBlob(dst, src *blob.Store, d string) error {
	f, err := src.Open(d)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := dst.Create()
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := io.Copy(w, f); err != nil {
		return err
	}
	got, _, err := w.Commit()
	if err != nil {
		return err
	}
	if got != d {
		return fmt.Errorf("blob %s hashes to %s", d, got)
	}
	return nil
}

// concludeMerged records the verification of the merged run and its state.
func (r *Run) concludeMerged(shards []MergedShard, budgetHit bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	digest, err := r.fold.CurrentDigest()
	if err != nil {
		return err
	}
	checks := r.fold.Checks()
	passed := true
	var failed []string
	for _, c := range checks {
		if c.Outcome != runtime.Passed {
			passed = false
			failed = append(failed, fmt.Sprintf("%s %s", c.ID, c.Outcome))
		}
	}
	w, stale := r.Planned.Worktree, ""
	for _, sh := range shards {
		if sh.Worktree.Digest != r.Planned.Worktree.Digest || sh.Worktree.Commit != r.Planned.Worktree.Commit || sh.Worktree.Tree != r.Planned.Worktree.Tree {
			w, stale = sh.Worktree, fmt.Sprintf("shard %d/%d saw work tree %s", sh.Record.Shard, sh.Record.Of, sh.Worktree.Digest)
			break
		}
	}
	if err := r.appendLocked(replay.TypeVerification, replay.VerificationData{Digest: digest, Passed: passed, Worktree: w.Digest}); err != nil {
		return err
	}
	switch {
	case stale != "":
		return r.transitionLocked(replay.Stale, replay.StateData{Reason: "changed while verifying: " + stale, Worktree: &w})
	case budgetHit:
		return r.transitionLocked(replay.Blocked, replay.StateData{Reason: "budget.max_duration exceeded"})
	case !passed:
		return r.transitionLocked(replay.Blocked, replay.StateData{Reason: "checks did not pass: " + listShort(failed)})
	}
	if err := r.transitionLocked(replay.AwaitingApproval, replay.StateData{}); err != nil {
		return err
	}
	if r.Contract.Approval.Required == 0 {
		return r.transitionLocked(replay.Complete, replay.StateData{Reason: "the contract requires no approval"})
	}
	return nil
}

// PlannedRef is the run's log as ExecSubset's caller binds a shard to:
// its binding, length and head.
func (r *Run) PlannedRef() (eventlog.Binding, int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Binding(), r.log.Len(), r.log.Head()
}

// EventTime returns the time the run log's n-th event (1-based) records,
// or "" when there is none.
func (r *Run) EventTime(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.log.Events()
	if n < 1 || n > len(ev) {
		return ""
	}
	return ev[n-1].Time
}

// EventAt returns the hash of the run log's n-th event (1-based), or "".
func (r *Run) EventAt(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.log.Events()
	if n < 1 || n > len(ev) {
		return ""
	}
	return ev[n-1].Hash
}
