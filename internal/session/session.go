// Package session is the agent-session recorder: it records an agent's
// session, turns and tool calls in a run's hash-chained event log while the
// run is IMPLEMENTING, passing each call through the contract's policy gate
// (internal/policy), running it in its runtime (process or docker) with the
// same bounds as a check, and leaving tamper-evident receipts.
//
// The recorder holds the run's writer lock only while it appends (open →
// append → close), never while a tool runs, so another process can decide
// an approval mid-session (Approve, Reject, Retry, Abandon). The log holds
// hashes and references only: the arguments are stored as content-addressed
// blobs (kernel/input), the streams as blobs, and the events name them.
//
// One call is, in log order:
//
//	tool.requested   action a-<12 hex>, tool, input_hash, input_ref, trace
//	tool.decided     by policy: allow | block | require-approval, the rule
//	(tool.decided    by human: approve | reject, bound to input_hash)
//	tool.started     receipt r-<12 hex>, the allowing decision, the owner
//	tool.finished    result success | failure | denied | crashed, output_hash
//
// A STARTED with no FINISHED after the recorder died is ambiguous: Resume
// (by a process that proves the recorded owner dead) stops what the call
// left running (reap.go), closes it as crashed and lists it in
// session.resumed; the session refuses new calls until a human decides
// retry (refused while anything of the call still runs) or abandon. kernel/replay enforces every one of these
// rules on every reader; this package only writes what replay accepts.
package session

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/policy"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// DefaultLockWait is how long a session waits for the run's writer lock.
const DefaultLockWait = 10 * time.Second

// Options say which run a session records into and how it runs tools.
type Options struct {
	StateDir string
	Run      string // run id or "latest"
	RepoDir  string
	Agent    string // identity recorded in session.started (printable, ≤ 200 bytes)
	// Runtime returns the provider of a tool's runtime ("process" | "docker").
	Runtime  func(kind string) (runtime.Runtime, error)
	LockWait time.Duration // default DefaultLockWait
	// ProgressEvery is how often a running tool's progress is checkpointed
	// (tool.progress, progress.go): 0 means DefaultProgressEvery, < 0 never.
	ProgressEvery time.Duration
	Now           func() time.Time
}

// Session is an open agent session. It holds no lock between calls.
type Session struct {
	o     Options
	run   string
	id    string
	agent string
	c     *contract.Resolved
	gate  *policy.Gate
	owner replay.Owner

	// held is the run as the last lock hold left it (run.Release), for
	// the next hold to re-take reading only what was appended since.
	mu   sync.Mutex
	held *run.Run

	// procs is the run's directory of process records, whose slots the
	// session's tools keep (runtime.Spec.KeepRecords) until drop.
	procs string

	// spares stages the session's new blobs in files created while a tool
	// runs (blob.Spares), made at the first call, closed by drop.
	spares *blob.Spares

	// exclude is what a tool's workspace copy leaves out (the state
	// directory's runs/), resolved once per session, not per call.
	excludeOnce sync.Once
	exclude     []string

	// stopped is what Resume found left running by the dead recorder.
	stopped []Stopped
}

// putter is the run's blob store through the session's spares.
func (s *Session) putter(r *run.Run) *blob.Spares {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spares == nil {
		s.spares = r.Blobs().Spares(2)
	}
	return s.spares
}

func (s *Session) workspaceExclude() []string {
	s.excludeOnce.Do(func() { s.exclude = run.WorkspaceExclude(s.o.RepoDir, s.o.StateDir) })
	return s.exclude
}

// ID is the session id (s-<12 hex>).
func (s *Session) ID() string { return s.id }

// Run is the run id the session records into.
func (s *Session) Run() string { return s.run }

// Tools are the contract's tools some rule could allow (policy.Visible).
func (s *Session) Tools() []contract.Tool { return s.gate.Visible() }

// Call is one tool call.
type Call struct {
	Tool        string
	Args        []byte // a JSON object
	Turn        string // optional
	TraceParent string // optional W3C traceparent
	TraceState  string // optional
}

// Status is what became of a call.
type Status string

// Statuses.
const (
	Finished        Status = "finished"
	Blocked         Status = "blocked"
	PendingApproval Status = "pending-approval"
	Rejected        Status = "rejected"
)

// Result is a call's result.
type Result struct {
	Action     string
	Status     Status
	Decision   policy.Decision
	Result     string // success | failure | denied | crashed (when finished)
	Outcome    runtime.Outcome
	ExitCode   int
	Stdout     []byte // captured, capped by output_limit
	Stderr     []byte
	InputHash  string
	OutputHash string
}

// LiveSessionError refuses to start or resume a session while another
// recorder owns an open session of the run that is not provably dead.
type LiveSessionError struct {
	Session string
	Owner   lock.Owner
	Why     string // "alive", "foreign host", "unknown"
}

func (e *LiveSessionError) Error() string {
	return fmt.Sprintf("session %s is owned by pid %d on host %s (%s): not taken over", e.Session, e.Owner.PID, e.Owner.Host, e.Why)
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *LiveSessionError) Is(target error) bool { return target == exit.Refused }

// AmbiguousError refuses a new call while actions that started and never
// finished await a human retry or abandon.
type AmbiguousError struct{ Calls []string }

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("session has ambiguous actions %s: decide each with 'proofgate tool retry' or 'proofgate tool abandon'", strings.Join(e.Calls, ", "))
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *AmbiguousError) Is(target error) bool { return target == exit.Refused }

// NotImplementingError refuses a session on a run that is not IMPLEMENTING.
type NotImplementingError struct {
	Run   string
	State string
}

func (e *NotImplementingError) Error() string {
	return fmt.Sprintf("run %s is %s, not IMPLEMENTING: sessions record only while a run is IMPLEMENTING (proofgate plan --implement)", e.Run, e.State)
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *NotImplementingError) Is(target error) bool { return target == exit.Refused }

// SelfApprovalError refuses a decision by the session's own agent identity.
type SelfApprovalError struct{ Call, Actor string }

func (e *SelfApprovalError) Error() string {
	return fmt.Sprintf("action %s: %q is the session's own agent identity and cannot decide its calls", e.Call, e.Actor)
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *SelfApprovalError) Is(target error) bool { return target == exit.Refused }

// UnknownCallError names a call the run does not have.
type UnknownCallError struct{ Call string }

func (e *UnknownCallError) Error() string {
	return fmt.Sprintf("action %q is not an action of this run", e.Call)
}

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *UnknownCallError) Is(target error) bool { return target == exit.Usage }

// DecidedError refuses a decision on an action that cannot take it: already
// decided, not pending approval, or not ambiguous.
type DecidedError struct {
	Call   string
	Status string
}

func (e *DecidedError) Error() string {
	return fmt.Sprintf("action %s is %s: the decision does not apply", e.Call, e.Status)
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *DecidedError) Is(target error) bool { return target == exit.Refused }

func (s *Session) now() time.Time {
	if s.o.Now != nil {
		return s.o.Now()
	}
	return time.Now()
}
