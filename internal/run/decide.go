package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Freshness tells where to recheck the code a run is bound to. A contract
// that came from a file (origin "file:<path>", relative to the repository
// root or absolute) is re-read from that file.
type Freshness struct {
	RepoDir  string
	StateDir string
}

// staleReasons compares the planned work tree with the observed one.
func staleReasons(planned replay.WorktreeState, now source.State) []string {
	var r []string
	if now.Commit != planned.Commit {
		r = append(r, fmt.Sprintf("HEAD moved from %.12s to %.12s", planned.Commit, now.Commit))
	} else if now.Tree != planned.Tree {
		r = append(r, "the commit's tree changed")
	}
	if now.Digest != planned.Digest {
		what := "the work tree changed"
		if len(now.Changes) > 0 {
			what += " (" + listShort(now.Changes) + ")"
		}
		r = append(r, what)
	}
	return r
}

// CheckFresh compares the run's binding with the repository and contract
// now. It returns a *StaleError listing what changed, or nil.
func (r *Run) CheckFresh(ctx context.Context, f Freshness) error {
	return checkFresh(ctx, r.Planned, f)
}

func checkFresh(ctx context.Context, planned replay.PlannedData, f Freshness) error {
	st, err := inspect(ctx, f.RepoDir, f.StateDir)
	if err != nil {
		return err
	}
	reasons := staleReasons(planned.Worktree, st)
	if path, ok := strings.CutPrefix(planned.Contract.Origin, "file:"); ok {
		if !filepath.IsAbs(path) {
			path = filepath.Join(f.RepoDir, filepath.FromSlash(path))
		}
		var c *contract.Resolved
		// contract.Load opens before it checks the file type; a FIFO put in
		// the contract's place would block status and approve forever.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s: not a regular file", path)
		} else {
			c, err = contract.Load(path, planned.Contract.Profile)
		}
		if err != nil {
			reasons = append(reasons, "the contract no longer loads: "+err.Error())
		} else if h, err := c.Hash(); err != nil || h != planned.Contract.Hash {
			reasons = append(reasons, "the contract changed")
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return &StaleError{Reasons: reasons}
}

// MarkStaleIfChanged moves a non-terminal run to STALE when CheckFresh
// finds a change, and returns that *StaleError (nil when fresh).
func (r *Run) MarkStaleIfChanged(ctx context.Context, f Freshness) error {
	st := r.State()
	if st.Terminal() || st == replay.Stale || st == replay.Blocked || st == replay.Implementing {
		return nil
	}
	err := r.CheckFresh(ctx, f)
	var se *StaleError
	if !errors.As(err, &se) {
		return err
	}
	now, ierr := inspect(ctx, f.RepoDir, f.StateDir)
	if ierr != nil {
		return ierr
	}
	w := replay.WorktreeState(now)
	if terr := r.transition(replay.Stale, replay.StateData{Reason: listShort(se.Reasons), Worktree: &w}); terr != nil {
		return terr
	}
	return se
}

// DecisionOptions describe a human decision.
type DecisionOptions struct {
	Actor  string
	Reject bool
	Reason string
	GitHub *replay.GitHubReview
	Fresh  Freshness
	// Hold records an approval without completing the run even when it
	// reaches approval.required: more approvals of the same evaluation
	// follow (every approval the approval rules credited is evidence of the
	// rules it satisfied), and the last of them, recorded without Hold,
	// completes the run once the approvals number at least approval.required.
	Hold bool
}

// RefusedError is a decision the kernel refused and why.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return "decision refused: " + e.Why }

// DecidedError says that the decision asked for is already the run's
// outcome: the same actor approved a COMPLETE run, or rejected a REJECTED
// one (a decision re-issued after a crash, say). Nothing is recorded, and
// callers report success.
type DecidedError struct {
	Actor    string
	Decision approval.Decision
	State    replay.State
}

func (e *DecidedError) Error() string {
	return fmt.Sprintf("%s already %s this run, which is %s", e.Actor, e.Decision, e.State)
}

// Decide records an approval or a rejection. It refuses unless the run is
// AWAITING_APPROVAL and reconciles: the log on disk still verifies and is
// the one this process holds, run.json agrees with it, the verification
// digest recomputed from run.json equals the last verification.completed,
// and neither the source nor the contract changed (else the run moves to
// STALE). An approval that brings the approvals to at least
// approval.required completes the run, unless o.Hold.
// Re-issuing a decision that is already the run's outcome returns a
// *DecidedError. A damaged log tail (a writer killed mid-append) does not
// refuse: the decision's append records its recovery.
func (r *Run) Decide(ctx context.Context, o DecisionOptions) error {
	if strings.TrimSpace(o.Actor) == "" {
		return &RefusedError{Why: "an actor is required"}
	}
	if o.Reject && strings.TrimSpace(o.Reason) == "" {
		return &RefusedError{Why: "a rejection needs a reason"}
	}
	if err := checkText(o.Actor, o.Reason); err != nil {
		return err
	}
	if err := r.decided(o); err != nil {
		return err
	}
	if st := r.State(); st != replay.AwaitingApproval {
		return &StateError{State: st, Action: "decide on"}
	}
	if err := r.reconcileOnDisk(); err != nil {
		return err
	}
	if err := r.MarkStaleIfChanged(ctx, o.Fresh); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fold
	if !o.Reject && f.ApprovedBy(o.Actor, o.GitHub) {
		return &RefusedError{Why: fmt.Sprintf("%s already approved this run", o.Actor)}
	}
	next := replay.AwaitingApproval
	decision := approval.Approved
	req := approval.Requirement{Required: r.Contract.Approval.Required}
	if o.Reject {
		next, decision = replay.Rejected, approval.Rejected
	} else if !o.Hold && req.Verdict(f.Approvers()+1, false).Decision == approval.Approved && f.AuthorizationSatisfied() {
		// A contract that requires an authorization holds the run here
		// until one is recorded (Authorize completes it then).
		next = replay.Complete
	}
	d := replay.ApprovalData{
		Decision: string(decision), Actor: o.Actor, Reason: o.Reason, State: next,
		VerificationDigest: f.VerificationDigest(),
		Source:             replay.Source{Commit: f.Source().Commit, Tree: f.Source().Tree},
		Contract:           f.ContractHash(), GitHub: o.GitHub,
	}
	if err := r.appendLocked(replay.TypeApproval, d); err != nil {
		return err
	}
	if next != replay.AwaitingApproval {
		return r.transitionLocked(next, replay.StateData{Actor: o.Actor, Reason: o.Reason})
	}
	return nil
}

// decided returns a *DecidedError when decision o is already the outcome.
func (r *Run) decided(o DecisionOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.fold
	switch {
	case f.State() == replay.Complete && !o.Reject && f.ApprovedBy(o.Actor, o.GitHub):
		return &DecidedError{Actor: o.Actor, Decision: approval.Approved, State: replay.Complete}
	case f.State() == replay.Rejected && o.Reject:
		for _, d := range f.Decisions() {
			if approval.Decision(d.Decision) == approval.Rejected && actor.Same(d.Actor, o.Actor) {
				return &DecidedError{Actor: o.Actor, Decision: approval.Rejected, State: replay.Rejected}
			}
		}
	}
	return nil
}

// reconcileOnDisk re-reads the run directory and checks that it is exactly
// what this writer holds: the chain, the projection and the digest. A
// damaged tail that this writer's next append repairs is left out.
func (r *Run) reconcileOnDisk() error {
	rep, err := Audit(r.Dir)
	if err != nil && r.log.Damaged() {
		if irep, _, ok, ierr := replay.AuditIntact(r.Dir); ok {
			rep, err = irep, ierr
		}
	}
	if err != nil {
		return err
	}
	if rep.ChainLength != r.log.Len() || rep.ChainHead != r.log.Head() {
		return &replay.AuditError{Reason: replay.ReasonChain, Detail: fmt.Sprintf("the log on disk (%d events) is not the one this writer holds (%d)", rep.ChainLength, r.log.Len())}
	}
	// Recompute the digest from run.json itself, not from the replay.
	b, err := os.ReadFile(filepath.Join(r.Dir, RunFile))
	if err != nil {
		return &replay.AuditError{Reason: replay.ReasonMissing, Detail: err.Error()}
	}
	var proj replay.Report
	if err := strictjson.Decode(b, &proj); err != nil {
		return &replay.AuditError{Reason: replay.ReasonProjection, Detail: err.Error()}
	}
	got, err := replay.VerificationDigest(&proj)
	if err != nil {
		return err
	}
	if got != rep.VerificationDigest {
		return &replay.AuditError{Reason: replay.ReasonDigest, Detail: fmt.Sprintf("run.json's checks digest to %s, the log recorded %s", got, rep.VerificationDigest)}
	}
	return nil
}

// checkText refuses an actor or reason that would not print as itself (a
// newline, an escape sequence): recorded, it would forge lines wherever the
// log is shown.
func checkText(name, reason string) error {
	if err := actor.Check("actor", name); err != nil {
		return &RefusedError{Why: err.Error()}
	}
	if err := printable.CheckText("reason", reason); err != nil {
		return &RefusedError{Why: err.Error()}
	}
	return nil
}

// Cancel moves a non-terminal run to CANCELLED.
func (r *Run) Cancel(actor, reason string) error {
	if strings.TrimSpace(actor) == "" || strings.TrimSpace(reason) == "" {
		return &RefusedError{Why: "cancel needs --actor and --reason"}
	}
	if err := checkText(actor, reason); err != nil {
		return err
	}
	st := r.State()
	if !replay.CanTransition(st, replay.Cancelled) {
		return &StateError{State: st, Action: "cancel"}
	}
	return r.transition(replay.Cancelled, replay.StateData{Actor: actor, Reason: reason})
}

// Supersede marks the run SUPERSEDED by run id by.
func (r *Run) Supersede(by, actor string) error {
	st := r.State()
	if !Retryable(st) {
		return &StateError{State: st, Action: "supersede"}
	}
	return r.transition(replay.Superseded, replay.StateData{By: by, Actor: actor, Reason: "retried as " + by})
}

// Retryable reports whether retry may supersede a run in state st.
// An IMPLEMENTING run is superseded only by its successor (planned with
// PlanOptions.ImplementedBy), never by a retry.
func Retryable(st replay.State) bool {
	return st != replay.Implementing && replay.CanTransition(st, replay.Superseded)
}

// RetryOptions describe a retry of run ID.
type RetryOptions struct {
	ID    string
	Actor string
	Plan  PlanOptions // the new run; Retry sets its Supersedes
}

// RetriedError refuses a retry of a run that was already retried as By,
// which has since moved on to State.
type RetriedError struct {
	ID, By string
	State  replay.State
}

func (e *RetriedError) Error() string {
	if Retryable(e.State) {
		return fmt.Sprintf("run %s was already retried as %s, which is %s; retry %s instead", e.ID, e.By, e.State, e.By)
	}
	return fmt.Sprintf("run %s was already retried as %s, which is %s", e.ID, e.By, e.State)
}

// Retry plans a new run that supersedes run ID (BLOCKED, STALE, or
// VERIFYING with its writer gone) and returns it PLANNED and locked, for
// Exec. ID's SUPERSEDED transition, naming the new run, is recorded after
// the new run is fully planned and just before it becomes visible, so a
// kill leaves either nothing (ID is still retryable) or ID superseded by a
// run that is PLANNED or not yet published. Retrying ID again finishes
// either: it returns that PLANNED run, or plans the named run afresh.
func Retry(ctx context.Context, o RetryOptions) (*Run, error) {
	old, err := Open(o.Plan.StateDir, o.ID)
	if err != nil {
		return nil, err
	}
	defer old.Close()
	p := o.Plan
	p.Supersedes = old.ID
	switch st := old.State(); {
	case Retryable(st):
		p.publish = func(id string) error { return old.Supersede(id, o.Actor) }
		return Plan(ctx, p)
	case st != replay.Superseded:
		return nil, &StateError{State: st, Action: "retry"}
	}
	old.mu.Lock()
	by := old.fold.SupersededBy()
	old.mu.Unlock()
	_, err = NewStore(p.StateDir).Resolve(by)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		p.id = by // the earlier retry died before publishing it
		return Plan(ctx, p)
	}
	if err != nil {
		return nil, &StateError{State: replay.Superseded, Action: "retry"}
	}
	next, err := Open(p.StateDir, by)
	if err != nil {
		return nil, err
	}
	if st := next.State(); st != replay.Planned || next.Planned.Supersedes != old.ID {
		next.Close()
		return nil, &RetriedError{ID: old.ID, By: by, State: st}
	}
	return next, nil
}

// Head returns the current chain head and length.
func (r *Run) Head() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.Head(), r.log.Len()
}

// Append records an extension event that changes no state: a type the
// event-type table lets replay.WriterAppend write (checkpoint.signed,
// lock.broken).
func (r *Run) Append(typ string, data any) (eventlog.Event, error) {
	if !replay.MayWrite(typ, replay.WriterAppend) {
		return eventlog.Event{}, fmt.Errorf("event type %q cannot be appended directly", typ)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.appendLocked(typ, data); err != nil {
		return eventlog.Event{}, err
	}
	ev := r.log.Events()
	return ev[len(ev)-1], nil
}
