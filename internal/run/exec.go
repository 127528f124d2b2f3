package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// ExecOptions configure the execution of a planned run.
type ExecOptions struct {
	RepoDir  string
	StateDir string
	// Runtimes maps a contract runtime name ("process", "docker") to its
	// provider. A check whose runtime is missing gets outcome error.
	Runtimes map[string]runtime.Runtime
	// Unavailable explains why a runtime is missing (e.g. no Docker daemon).
	Unavailable map[string]string
	Jobs        int
	// Progress is told of each check's start, heartbeat and end; nil is
	// silent. Heartbeat is its interval (0 means DefaultHeartbeat).
	Progress  Progress
	Heartbeat time.Duration
	// Caches is the cache store (root and scope) that checks declaring
	// caches use; nil: such checks fail with outcome error.
	Caches *cache.Store
}

// Exec runs every check of a PLANNED run (or an IMPLEMENTING one whose
// agent sessions all ended: see SessionOpenError) (in parallel up to Jobs, in
// dependency order), records each result, computes the verification digest
// and moves the run to AWAITING_APPROVAL (every check passed; COMPLETE when
// the contract requires no approval), BLOCKED, or STALE when the work tree
// changed while the checks ran.
func (r *Run) Exec(ctx context.Context, opts ExecOptions) error {
	if st := r.State(); st != replay.Planned && st != replay.Implementing {
		return &StateError{State: st, Action: "execute"}
	}
	if err := r.transition(replay.Verifying, replay.StateData{}); err != nil {
		return err
	}
	jobs := opts.Jobs
	if jobs < 1 {
		jobs = 1
	}
	runCtx := ctx
	var budgetCancel context.CancelFunc = func() {}
	budget := time.Duration(r.Contract.Budget.MaxDuration)
	if budget > 0 {
		runCtx, budgetCancel = context.WithTimeout(ctx, budget)
	}
	defer budgetCancel()

	s := r.newScheduler(runCtx, opts, jobs, r.Contract.Checks, r.blobs, r.append)
	s.runAll()
	// A run that cannot finish its verification says why in its own log
	// (best effort: the log itself may be what failed), rather than stay
	// VERIFYING with the reason only on a terminal that is gone.
	if err := s.firstErr(); err != nil {
		if terr := r.transition(replay.Blocked, replay.StateData{Reason: "harness error: " + err.Error()}); terr != nil {
			return errors.Join(err, terr)
		}
		return err
	}
	if ctx.Err() != nil {
		err := fmt.Errorf("run %s interrupted: %w", r.ID, ctx.Err())
		if terr := r.transition(replay.Cancelled, replay.StateData{Reason: "interrupted: " + ctx.Err().Error()}); terr != nil {
			return errors.Join(err, terr)
		}
		return err
	}
	budgetHit := budget > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded)
	if budgetHit {
		if err := r.append(replay.TypeBudget, replay.BudgetData{MaxDurationMS: budget.Milliseconds()}); err != nil {
			return err
		}
	}
	return r.finishVerification(ctx, opts, budgetHit)
}

func (r *Run) finishVerification(ctx context.Context, opts ExecOptions, budgetHit bool) error {
	st, err := inspect(ctx, opts.RepoDir, opts.StateDir)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	checks := r.fold.Checks()
	digest, err := r.fold.CurrentDigest()
	if err != nil {
		return err
	}
	passed := true
	for _, c := range checks {
		passed = passed && c.Outcome == runtime.Passed
	}
	if err := r.appendLocked(replay.TypeVerification, replay.VerificationData{Digest: digest, Passed: passed, Worktree: st.Digest}); err != nil {
		return err
	}
	if reasons := staleReasons(r.Planned.Worktree, st); len(reasons) > 0 {
		w := replay.WorktreeState(st)
		return r.transitionLocked(replay.Stale, replay.StateData{Reason: "changed while verifying: " + listShort(reasons), Worktree: &w})
	}
	switch {
	case budgetHit:
		return r.transitionLocked(replay.Blocked, replay.StateData{Reason: "budget.max_duration exceeded"})
	case !passed:
		var failed []string
		for _, c := range checks {
			if c.Outcome != runtime.Passed {
				failed = append(failed, fmt.Sprintf("%s %s", c.ID, c.Outcome))
			}
		}
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

type scheduler struct {
	r    *Run
	opts ExecOptions
	ctx  context.Context
	sem  chan struct{}
	// checks are the checks to run (all the run's, or a shard's: every
	// dependency among them); record appends an event to the log the
	// results go to, blobs stores their output; exclude adds paths the
	// workspace copy leaves out.
	checks  []contract.Check
	record  func(typ string, data any) error
	blobs   *blob.Store
	exclude []string
	// runDir holds the run-lifetime caches of these checks (nil when none
	// uses one; runDirErr when it could not be opened).
	runDir    *cache.RunDir
	runDirErr error

	mu      sync.Mutex
	done    map[string]chan struct{}
	outcome map[string]runtime.Outcome
	err     error
}

func (r *Run) newScheduler(ctx context.Context, opts ExecOptions, jobs int, checks []contract.Check, blobs *blob.Store, record func(string, any) error) *scheduler {
	s := &scheduler{r: r, opts: opts, ctx: ctx, sem: make(chan struct{}, jobs), done: map[string]chan struct{}{}, outcome: map[string]runtime.Outcome{},
		checks: checks, record: record, blobs: blobs}
	for _, c := range checks {
		s.done[c.ID] = make(chan struct{})
	}
	return s
}

// runAll runs every check of s, each once its dependencies finished.
func (s *scheduler) runAll() {
	// Process-runtime checks publish their records from kept slots
	// (runtime.Spec.KeepRecords, ADR 0028), released once all are done.
	defer lock.DropSlots(filepath.Join(s.r.Dir, ProcDir))
	defer s.openRunDir()()
	var wg sync.WaitGroup
	for _, c := range s.checks {
		wg.Add(1)
		go func(c contract.Check) {
			defer wg.Done()
			s.runCheck(c)
		}(c)
	}
	wg.Wait()
}

func (s *scheduler) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *scheduler) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *scheduler) runCheck(c contract.Check) {
	defer close(s.done[c.ID])
	// Wait for dependencies; any that did not pass skips this check.
	for _, d := range c.DependsOn {
		<-s.done[d]
		s.mu.Lock()
		o := s.outcome[d]
		s.mu.Unlock()
		if o != runtime.Passed {
			s.skip(c, fmt.Sprintf("dependency %q did not pass (%s)", d, o))
			return
		}
	}
	select {
	case s.sem <- struct{}{}:
	case <-s.ctx.Done():
		s.skip(c, "not started: "+reasonOf(s.ctx))
		return
	}
	defer func() { <-s.sem }()
	if s.ctx.Err() != nil {
		s.skip(c, "not started: "+reasonOf(s.ctx))
		return
	}
	if s.firstErr() != nil {
		s.skip(c, "not started: the harness failed")
		return
	}
	o, err := s.execute(c)
	if err != nil {
		s.setErr(err)
	}
	s.mu.Lock()
	s.outcome[c.ID] = o
	s.mu.Unlock()
}

func reasonOf(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "budget.max_duration exceeded"
	}
	return "cancelled"
}

func (s *scheduler) skip(c contract.Check, why string) {
	s.mu.Lock()
	s.outcome[c.ID] = runtime.Skipped
	s.mu.Unlock()
	if err := s.record(replay.TypeCheckFinished, replay.CheckFinishedData{Check: c.ID, Outcome: runtime.Skipped, ExitCode: -1, Detail: why}); err != nil {
		s.setErr(err)
	}
	if p := s.opts.Progress; p != nil {
		p.Finished(c.ID, runtime.Skipped, 0, why)
	}
}

// watch reports c as started and then beats until the returned stop
// function is first called (a no-op without Progress).
func (s *scheduler) watch(c contract.Check, note string, size func() int64) (stop func()) {
	p := s.opts.Progress
	if p == nil {
		return func() {}
	}
	p.Started(c.ID, note)
	interval := s.opts.Heartbeat
	if interval <= 0 {
		interval = DefaultHeartbeat
	}
	quit := make(chan struct{})
	done := heartbeat(p, c.ID, interval, time.Now(), size, quit)
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// execute runs one check and records its evidence.
func (s *scheduler) execute(c contract.Check) (runtime.Outcome, error) {
	outW, err := s.blobs.Create()
	if err != nil {
		return runtime.Error, err
	}
	defer outW.Abort()
	errW, err := s.blobs.Create()
	if err != nil {
		return runtime.Error, err
	}
	defer errW.Abort()
	lease, cacheErr := s.acquireCaches(c)
	if err := s.record(replay.TypeCheckStarted, startedData(c, lease)); err != nil {
		lease.release()
		return runtime.Error, err
	}
	limit := int64(c.Output)
	stdout, stderr := runtime.NewCapture(outW, limit), runtime.NewCapture(errW, limit)
	stop := s.watch(c, cacheNote(lease), func() int64 { return stdout.Len() + stderr.Len() })
	defer stop()
	ps := &productStore{blobs: s.blobs}
	res := s.invoke(c, lease, cacheErr, stdout, stderr, ps)
	stop() // no heartbeat after the check ended
	if s.ctx.Err() != nil && res.Outcome == runtime.Error && errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		res.Detail = "killed: budget.max_duration exceeded"
	}
	for _, cp := range []*runtime.Capture{stdout, stderr} {
		if err := cp.Err(); err != nil {
			return runtime.Error, fmt.Errorf("check %s: storing output: %w", c.ID, err)
		}
	}
	if _, _, err := outW.Commit(); err != nil {
		return runtime.Error, err
	}
	if _, _, err := errW.Commit(); err != nil {
		return runtime.Error, err
	}
	so, se := stdout.Stream(), stderr.Stream()
	d := replay.CheckFinishedData{
		Check: c.ID, Outcome: res.Outcome, ExitCode: res.ExitCode,
		DurationMS: res.Finished.Sub(res.Started).Milliseconds(),
		Started:    res.Started.UTC().Format(time.RFC3339Nano), Finished: res.Finished.UTC().Format(time.RFC3339Nano),
		Stdout: &so, Stderr: &se, Attestation: &res.Attestation, Detail: res.Detail,
	}
	if c.Evidence == "structured" && d.Outcome == runtime.Passed {
		out, err := readBlobTail(s.blobs, so.Digest, maxReportLine*4)
		if err != nil {
			return runtime.Error, err
		}
		rep, found := findReport(out)
		d.Structured = rep.recorded()
		if why := judgeReport(rep, found, c.Criteria, s.opts.RepoDir); why != "" {
			d.Outcome, d.Detail = runtime.Failed, why
		}
	}
	if len(c.Produces) > 0 && d.Outcome == runtime.Passed {
		if d.Products, err = ps.products(c.Produces); err != nil {
			d.Outcome, d.ExitCode, d.Detail = runtime.Error, -1, "produces: "+err.Error()
		}
	}
	if err := s.record(replay.TypeCheckFinished, d); err != nil {
		return runtime.Error, err
	}
	if p := s.opts.Progress; p != nil {
		p.Finished(c.ID, d.Outcome, time.Duration(d.DurationMS)*time.Millisecond, d.Detail)
	}
	return d.Outcome, nil
}

// invoke runs c in its runtime with the caches the lease holds (and
// releases them), or says why it could not run.
func (s *scheduler) invoke(c contract.Check, lease *cacheLease, cacheErr error, stdout, stderr *runtime.Capture, ps *productStore) runtime.Result {
	r := s.r
	now := time.Now().UTC()
	rt, ok := s.opts.Runtimes[c.Runtime]
	switch {
	case cacheErr != nil:
		return runtime.Result{ExitCode: -1, Outcome: runtime.Error, Started: now, Finished: now,
			Detail: cacheErr.Error(), Attestation: runtime.Attestation{Provider: c.Runtime}}
	case !ok:
		lease.release()
		why := s.opts.Unavailable[c.Runtime]
		if why == "" {
			why = "no provider configured"
		}
		return runtime.Result{ExitCode: -1, Outcome: runtime.Error, Started: now, Finished: now,
			Detail: fmt.Sprintf("runtime %q unavailable: %s", c.Runtime, why), Attestation: runtime.Attestation{Provider: c.Runtime}}
	}
	spec := specFor(r.ID, c, s.opts.RepoDir)
	spec.ProcDir = filepath.Join(r.Dir, ProcDir)
	spec.KeepRecords = true // dropped when runAll returns
	spec.Exclude = append(stateExclude(s.opts.RepoDir, s.opts.StateDir), s.exclude...)
	spec.Sandbox.Caches = lease.mounts()
	spec.Produces, spec.Collect = c.Produces, ps
	res := rt.Run(s.ctx, spec, stdout, stderr)
	releaseCaches(&res, lease)
	offlineNote(c, &res)
	return res
}

func readBlobTail(blobs *blob.Store, d string, n int64) ([]byte, error) {
	f, err := blobs.Open(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

// specFor builds the runtime spec of a check (contract.Execution.Spec, the
// one function tools use too).
func specFor(runID string, c contract.Check, repo string) runtime.Spec {
	return c.Execution().Spec(runID, c.ID, c.Run, repo)
}

func (r *Run) readBlobTail(d string, n int64) ([]byte, error) { return readBlobTail(r.blobs, d, n) }
