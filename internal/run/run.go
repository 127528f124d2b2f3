package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Version is recorded as the planner in run.planned.
var Version = "proofgate/dev"

// Run is an open run: its writer lock is held until Close.
type Run struct {
	ID       string
	Dir      string
	Contract *contract.Resolved
	Planned  replay.PlannedData

	mu    sync.Mutex
	log   *eventlog.Log
	lk    *lock.Lock
	fold  *replay.Folder
	blobs *blob.Store
	now   func() time.Time
	// lagging: session events were appended since run.json was last
	// written; Close writes it (one projection per lock hold).
	lagging bool
	// kept is the re-takable writer lock a Release left for Reopen
	// (lock.AcquireKept), nil when there is none.
	kept *lock.Lock
}

// DirtyError refuses planning on a work tree with uncommitted changes.
type DirtyError struct{ Changes []string }

func (e *DirtyError) Error() string {
	return fmt.Sprintf("work tree has uncommitted changes (%s); commit them or pass --allow-dirty, which is recorded", listShort(e.Changes))
}

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *DirtyError) Is(target error) bool { return target == exit.Usage }

// StaleError says the run no longer matches the code or the contract.
type StaleError struct{ Reasons []string }

func (e *StaleError) Error() string { return "run is STALE: " + listShort(e.Reasons) }

// StateError refuses an action the run's state does not allow.
type StateError struct {
	State  replay.State
	Action string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("cannot %s a run that is %s", e.Action, e.State)
}

func listShort(s []string) string {
	if len(s) > 5 {
		return fmt.Sprintf("%s and %d more", joinComma(s[:5]), len(s)-5)
	}
	return joinComma(s)
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// PlanOptions describe a new run.
type PlanOptions struct {
	RepoDir  string // the repository work tree
	StateDir string // the state directory (its runs/ is excluded from the work-tree digest)
	Contract *contract.Resolved
	// Origin is where the contract came from (see ContractRef.Origin).
	Origin     string
	AllowDirty bool
	Repo       string // owner/name when known
	Context    []Snapshot
	Supersedes string
	// ImplementedBy, when set, is the implementation run (IMPLEMENTING,
	// every session ended, the same contract) this run verifies: the run
	// records it in run.planned's implemented_by and supersedes it
	// (ADR 0017).
	ImplementedBy string
	Now           func() time.Time
	// Implement moves the run to IMPLEMENTING right after planning (one
	// state.changed), for an agent session (internal/session) to record into
	// before verification.
	Implement bool

	// implemented is the implemented_by record planImplemented made.
	implemented *replay.ImplementedBy

	// id, when set, is the new run's id (Retry re-planning a run that an
	// interrupted retry named but never published).
	id string
	// publish, when set, is called with the run id once the run is fully
	// planned, just before it becomes visible in the store; an error
	// abandons the plan.
	publish func(id string) error
}

// planningPrefix names a run directory being planned (<state>/runs/.plan-<id>):
// Store.List does not see it, and a kill leaves no half-planned run.
const planningPrefix = ".plan-"

// Plan creates a run directory, freezes the contract, binds the source and
// records run.planned (and context.attached). The directory is built under
// a hidden name and renamed into place when complete, so a run is either
// fully planned or absent, even after a kill. The returned run holds its
// lock. On failure nothing is left behind.
func Plan(ctx context.Context, opts PlanOptions) (r *Run, err error) {
	if opts.ImplementedBy != "" && opts.implemented == nil {
		return planImplemented(ctx, opts)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	st, frozen, hash, err := planInputs(ctx, opts)
	if err != nil {
		return nil, err
	}
	recoverPrune(opts.StateDir)
	store := NewStore(opts.StateDir)
	if err := os.MkdirAll(store.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	id := opts.id
	if id == "" {
		id = NewID(now())
	}
	final := store.Path(id)
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("state directory: run %s already exists", id)
	}
	sweepPlans(store.Dir)
	dir := filepath.Join(store.Dir, planningPrefix+id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	published := false
	defer func() {
		if err != nil {
			if r != nil {
				r.Close()
			}
			if !published {
				os.RemoveAll(dir)
			}
			r = nil
		}
	}()
	lk, err := lock.Acquire(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, err
	}
	r = &Run{ID: id, Dir: dir, Contract: opts.Contract, lk: lk, fold: replay.NewFolder(opts.Contract), blobs: blob.New(filepath.Join(dir, BlobDir)), now: now}
	if err := durable.WriteFile(filepath.Join(dir, ContractFile), frozen, 0o444); err != nil {
		return r, fmt.Errorf("state directory: %w", err)
	}
	r.log, err = eventlog.Create(filepath.Join(dir, EventsFile), eventlog.Binding{Run: id, Source: eventlog.Source{Commit: st.Commit, Tree: st.Tree}, Contract: hash})
	if err != nil {
		return r, err
	}
	if err := r.recordPlan(opts, st, hash); err != nil {
		return r, err
	}
	if opts.Implement {
		if err := r.transition(replay.Implementing, replay.StateData{Reason: "planned for an agent session"}); err != nil {
			return r, err
		}
	}
	if opts.publish != nil {
		if err := opts.publish(id); err != nil {
			return r, err
		}
	}
	if err := os.Rename(dir, final); err != nil {
		return r, fmt.Errorf("state directory: %w", err)
	}
	published = true
	return r, r.moved(final)
}

// planInputs is what a plan binds: the source (refused when dirty unless
// opts.AllowDirty), the frozen contract and its hash.
func planInputs(ctx context.Context, opts PlanOptions) (source.State, []byte, string, error) {
	st, err := inspect(ctx, opts.RepoDir, opts.StateDir)
	if err != nil {
		return source.State{}, nil, "", err
	}
	if st.Dirty && !opts.AllowDirty {
		return source.State{}, nil, "", &DirtyError{Changes: st.Changes}
	}
	frozen, err := opts.Contract.Canonical()
	if err != nil {
		return source.State{}, nil, "", err
	}
	return st, frozen, canon.SumBytes(frozen), nil
}

// moved points an open run at its directory's new name.
func (r *Run) moved(dir string) error {
	if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.lk.Moved(filepath.Join(dir, LockFile)); err != nil {
		return err
	}
	r.Dir, r.blobs = dir, blob.New(filepath.Join(dir, BlobDir))
	n, head := r.log.Len(), r.log.Head()
	if err := r.log.Close(); err != nil {
		return err
	}
	lg, err := eventlog.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		return err
	}
	r.log = lg
	if lg.Len() != n || lg.Head() != head {
		return &replay.AuditError{Reason: replay.ReasonChain, Detail: fmt.Sprintf("the log changed while its run was published (%d events, planned %d)", lg.Len(), n)}
	}
	return nil
}

// sweepPlans removes the directories of plans whose planner died before
// publishing them: their lock's owner is dead, or they never got a lock
// and are older than a minute. Nothing in them was ever visible as a run.
func sweepPlans(runs string) {
	ents, err := os.ReadDir(runs)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), planningPrefix) || !ValidID(strings.TrimPrefix(e.Name(), planningPrefix)) {
			continue
		}
		dir := filepath.Join(runs, e.Name())
		o, err := lock.Read(filepath.Join(dir, LockFile))
		switch {
		case err == nil && !lock.Alive(o):
		case errors.Is(err, fs.ErrNotExist):
			if fi, serr := os.Stat(dir); serr != nil || time.Since(fi.ModTime()) < time.Minute {
				continue
			}
		default:
			continue
		}
		os.RemoveAll(dir)
	}
}

// Open opens an existing run for writing: it takes the lock, verifies the
// chain and replays it, and repairs a lagging projection. A tampered
// projection or a log that does not reconcile is refused.
func Open(stateDir, id string) (r *Run, err error) {
	store := NewStore(stateDir)
	id, err = store.Resolve(id)
	if err != nil {
		return nil, err
	}
	dir := store.Path(id)
	recoverPrune(stateDir)
	if retention.IsArchived(dir) {
		return nil, &ArchivedError{ID: id}
	}
	lk, err := lock.Acquire(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, err
	}
	if retention.IsArchived(dir) { // archived while we took the lock
		lk.Release()
		return nil, &ArchivedError{ID: id}
	}
	return openLocked(dir, id, lk)
}

// openLocked is Open once the lock lk is held; on failure it releases it.
func openLocked(dir, id string, lk *lock.Lock) (r *Run, err error) {
	defer func() {
		if err != nil {
			lk.Release()
		}
	}()
	c, hash, err := replay.ReadContract(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	// eventlog.Open tolerates a torn tail (a writer killed mid-append) and
	// records its recovery on the next append; every other defect refuses.
	lg, err := eventlog.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lg.Close()
		}
	}()
	// Open read no sealed segment (its head index vouched for them): the
	// replay needs every event, so Load reads and verifies the rest.
	if err := lg.Load(); err != nil {
		return nil, err
	}
	events := lg.Events()
	if len(events) == 0 || events[0].Contract != hash || events[0].Run != id {
		return nil, &replay.AuditError{Reason: replay.ReasonContract, Line: 1, Detail: "the log is not bound to this run's contract.json and id"}
	}
	r = &Run{ID: id, Dir: dir, Contract: c, lk: lk, log: lg, fold: replay.NewFolder(c), blobs: blob.New(filepath.Join(dir, BlobDir)), now: time.Now}
	for i, e := range events {
		if err := r.fold.Apply(i+1, e); err != nil {
			return nil, err
		}
	}
	r.Planned = r.fold.Planned()
	rep := r.fold.Report(len(events), replay.HeadOf(events))
	switch err := replay.CompareProjection(os.DirFS(dir), c, events, rep); {
	case err == nil:
	case replay.IsReason(err, replay.ReasonProjectionLag):
		// While a session is open its events are not projected (ADR
		// 0019): the lag is expected, and repaired when it ends.
		if !r.fold.SessionOpen() {
			if err := r.writeProjection(); err != nil {
				return nil, err
			}
		}
	default:
		return nil, err
	}
	if err := r.completeDecision(); err != nil {
		return nil, err
	}
	return r, nil
}

// completeDecision records the state change of a decision whose writer
// died after approval.recorded and before its state.changed: the same
// state.changed the decider would have written, so that a decision and
// the state it moves the run to are one fact for every later reader.
func (r *Run) completeDecision() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.fold.Due()
	if d == nil || r.fold.State() != d.From {
		return nil
	}
	return r.transitionLocked(d.To, replay.StateData{Actor: d.Actor, Reason: d.Reason})
}

// Close writes the staged session events (one write, one fsync), the
// projection when it matters, then releases the log and the lock.
func (r *Run) Close() error {
	var errs []error
	if r.log != nil {
		if err := r.log.Flush(); err != nil {
			errs = append(errs, err)
		} else if r.lagging {
			errs = append(errs, r.writeProjection())
		}
	}
	if r.log != nil {
		errs = append(errs, r.log.Close())
	}
	if r.lk != nil {
		errs = append(errs, r.lk.Release())
		r.lk.Discard()
	}
	r.Discard()
	return errors.Join(errs...)
}

// State returns the current state.
func (r *Run) State() replay.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fold.State()
}

// Report returns the current projection.
func (r *Run) Report() *replay.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fold.Report(r.log.Len(), r.log.Head())
}

// append writes one event, replays it and rewrites run.json.
func (r *Run) append(typ string, data any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.appendLocked(typ, data)
}

func (r *Run) appendLocked(typ string, data any) error {
	e, err := r.log.Append(typ, data)
	if err != nil {
		return err
	}
	if err := r.fold.Apply(r.log.Len(), e); err != nil {
		return fmt.Errorf("kernel wrote an event it cannot replay: %w", err)
	}
	return r.writeProjectionLocked()
}

func (r *Run) transition(to replay.State, d replay.StateData) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transitionLocked(to, d)
}

func (r *Run) transitionLocked(to replay.State, d replay.StateData) error {
	from := r.fold.State()
	if !replay.CanTransition(from, to) {
		return &replay.TransitionError{From: from, To: to}
	}
	if s, open := r.fold.OpenSession(); open && from == replay.Implementing {
		return &SessionOpenError{Run: r.ID, Session: s.ID, To: to}
	}
	d.From, d.To = from, to
	return r.appendLocked(replay.TypeState, d)
}

func (r *Run) writeProjection() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeProjectionLocked()
}

func (r *Run) writeProjectionLocked() error {
	r.lagging = false
	b, err := json.MarshalIndent(r.fold.Report(r.log.Len(), r.log.Head()), "", "  ")
	if err != nil {
		return err
	}
	// No directory fsync: a crash may bring back the previous projection,
	// which the next writer repairs (ADR 0002); it saves one fsync per event.
	return durable.ReplaceFile(filepath.Join(r.Dir, RunFile), append(b, '\n'), 0o644)
}

// recordPlan appends the run's first events: run.planned, then one
// context.attached per context snapshot (stored as a blob).
func (r *Run) recordPlan(opts PlanOptions, st source.State, hash string) error {
	ids := make([]string, len(opts.Contract.Checks))
	for i, c := range opts.Contract.Checks {
		ids[i] = c.ID
	}
	r.Planned = replay.PlannedData{
		Contract:      replay.ContractRef{Hash: hash, Origin: opts.Origin, Profile: opts.Contract.Profile},
		Worktree:      replay.WorktreeState(st),
		AllowDirty:    opts.AllowDirty,
		Checks:        ids,
		Repo:          opts.Repo,
		Supersedes:    opts.Supersedes,
		Planner:       Version,
		ImplementedBy: opts.implemented,
	}
	if err := r.append(replay.TypePlanned, r.Planned); err != nil {
		return err
	}
	for i, s := range opts.Context {
		d, err := r.blobs.Put(s.Canonical)
		if err != nil {
			return err
		}
		if err := r.append(replay.TypeContext, replay.ContextData{Index: i, SnapshotHash: s.Hash, Blob: d, Query: s.Query}); err != nil {
			return err
		}
	}
	return nil
}

func inspect(ctx context.Context, repoDir, stateDir string) (source.State, error) {
	root, err := source.Root(ctx, repoDir)
	if err != nil {
		return source.State{}, err
	}
	return source.Inspect(ctx, repoDir, append(stateExclude(root, stateDir), pruneExclude(root, stateDir)...)...)
}

// stateExclude returns the state directory's runs/ (everything the harness
// writes: run directories, blobs and their temporary files, events.lock)
// relative to dir, when it lies inside dir: the work-tree digest and a
// workspace copy both leave it out.
func stateExclude(dir, stateDir string) []string {
	return pathExclude(dir, filepath.Join(stateDir, "runs"))
}

// evalPrefix resolves symlinks in the longest existing prefix of p.
func evalPrefix(p string) (string, error) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, nil
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	r, err := evalPrefix(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(r, filepath.Base(p)), nil
}
