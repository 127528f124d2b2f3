package replay

import (
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Session and tool event types (issue 13), written only by
// WriterSession (internal/session through internal/run). docs/SPEC.md §4 and
// §5.1 specify them and the rules the replay enforces on them.
const (
	TypeSessionStarted = "session.started"
	TypeSessionResumed = "session.resumed"
	TypeSessionEnded   = "session.ended"
	TypeTurnStarted    = "turn.started"
	TypeTurnFinished   = "turn.finished"
	TypeToolRequested  = "tool.requested"
	TypeToolDecided    = "tool.decided"
	TypeToolStarted    = "tool.started"
	TypeToolProgress   = "tool.progress"
	TypeToolFinished   = "tool.finished"
)

// Owner is the writer identity a session records (internal/lock's Owner, the
// same JSON): whose process ran the session's tools, and whom a resumer
// must prove dead.
type Owner struct {
	PID     int       `json:"pid"`
	Start   uint64    `json:"start"`
	BootID  string    `json:"boot_id"`
	Host    string    `json:"host"`
	Created time.Time `json:"created"`
}

// same reports whether o and p are one process (Created is when a lock
// was taken, not who took it).
func (o Owner) same(p Owner) bool {
	return o.PID == p.PID && o.Start == p.Start && o.BootID == p.BootID && o.Host == p.Host
}

// Span is the trace context a call records (internal/trace's Span, the same
// JSON): hex trace and span ids, the caller's span, the flags.
type Span struct {
	TraceID      string `json:"trace_id"`
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id"`
	Flags        string `json:"flags"`
	State        string `json:"tracestate,omitempty"`
}

// SessionStartedData is the data of session.started.
type SessionStartedData struct {
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Owner   Owner  `json:"owner"`
}

// SessionResumedData is the data of session.resumed: a new owner took the
// session over from a provably dead one; Ambiguous lists every action of
// the session that started and was never resolved (sorted).
type SessionResumedData struct {
	Session       string   `json:"session"`
	Owner         Owner    `json:"owner"`
	PreviousOwner Owner    `json:"previous_owner"`
	Ambiguous     []string `json:"ambiguous"`
}

// SessionEndedData is the data of session.ended.
type SessionEndedData struct {
	Session string `json:"session"`
	Reason  string `json:"reason,omitempty"`
}

// TurnData is the data of turn.started and turn.finished.
type TurnData struct {
	Session string `json:"session"`
	Turn    string `json:"turn"`
}

// ToolRequestedData is the data of tool.requested.
type ToolRequestedData struct {
	Session   string `json:"session"`
	Turn      string `json:"turn,omitempty"`
	Call      string `json:"action"`
	Tool      string `json:"tool"`
	InputHash string `json:"input_hash"`
	InputRef  string `json:"input_ref"`
	Manifest  bool   `json:"manifest,omitempty"`
	Trace     *Span  `json:"trace,omitempty"`
	RetryOf   string `json:"retry_of,omitempty"`
}

// Deciders and decisions of tool.decided.
const (
	ByPolicy = "policy"
	ByHuman  = "human"

	DecisionAllow           = "allow"
	DecisionBlock           = "block"
	DecisionRequireApproval = "require-approval"
	DecisionApprove         = "approve"
	DecisionReject          = "reject"
	DecisionRetry           = "retry"
	DecisionAbandon         = "abandon"
)

// ToolDecidedData is the data of tool.decided.
type ToolDecidedData struct {
	Call      string `json:"action"`
	By        string `json:"by"`
	Decision  string `json:"decision"`
	Rule      *int   `json:"rule,omitempty"`       // policy only
	RuleID    string `json:"rule_id,omitempty"`    // policy only
	InputHash string `json:"input_hash,omitempty"` // human approve/reject
	Actor     string `json:"actor,omitempty"`      // human only
	Reason    string `json:"reason,omitempty"`
}

// ToolStartedData is the data of tool.started: the receipt written before
// the tool runs.
type ToolStartedData struct {
	Call      string `json:"action"`
	Receipt   string `json:"receipt"`
	Session   string `json:"session"`
	Tool      string `json:"tool"`
	InputHash string `json:"input_hash"`
	InputRef  string `json:"input_ref"`
	Decision  string `json:"decision"` // allow | approve
	Owner     Owner  `json:"owner"`
	Trace     *Span  `json:"trace,omitempty"`
}

// ToolProgressData is the data of tool.progress.
type ToolProgressData struct {
	Call     string `json:"action"`
	Receipt  string `json:"receipt"`
	Seq      int    `json:"seq"`
	Snapshot string `json:"snapshot"`
}

// Results of tool.finished.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
	ResultDenied  = "denied" // started, but the runtime could not run it (outcome error)
	ResultCrashed = "crashed"

	ClosedByRecovery = "recovery"
)

// ToolFinishedData is the data of tool.finished.
type ToolFinishedData struct {
	Call        string               `json:"action"`
	Receipt     string               `json:"receipt"`
	Result      string               `json:"result"`
	Outcome     runtime.Outcome      `json:"outcome,omitempty"`
	ExitCode    int                  `json:"exit_code"`
	DurationMS  int64                `json:"duration_ms"`
	OutputHash  string               `json:"output_hash"`
	Stdout      *runtime.Stream      `json:"stdout,omitempty"`
	Stderr      *runtime.Stream      `json:"stderr,omitempty"`
	Attestation *runtime.Attestation `json:"attestation,omitempty"`
	ClosedBy    string               `json:"closed_by,omitempty"`
}

// OutputHash is the output hash tool.finished records: "sha256:" + hex
// SHA-256 of the canonical JSON {"exit_code", "outcome", "stderr",
// "stdout"}, the streams by blob digest ("" when absent).
func OutputHash(exitCode int, outcome runtime.Outcome, stdout, stderr *runtime.Stream) (string, error) {
	digest := func(s *runtime.Stream) string {
		if s == nil {
			return ""
		}
		return s.Digest
	}
	return canon.Digest(struct {
		ExitCode int             `json:"exit_code"`
		Outcome  runtime.Outcome `json:"outcome"`
		Stdout   string          `json:"stdout"`
		Stderr   string          `json:"stderr"`
	}{exitCode, outcome, digest(stdout), digest(stderr)})
}

// SessionView is one session as the replay reconstructs it (Report.Sessions).
type SessionView struct {
	ID    string     `json:"id"`
	Agent string     `json:"agent"`
	Open  bool       `json:"open"`
	Owner Owner      `json:"owner"`
	Turns int        `json:"turns"`
	Calls []CallView `json:"actions"`
}

// Call statuses of CallView.
const (
	CallRequested = "requested"        // no decision yet
	CallBlocked   = "blocked"          // policy block
	CallPending   = "pending-approval" // require-approval, no human decision
	CallAllowed   = "allowed"          // policy allow, not started
	CallApproved  = "approved"         // human approve, not started
	CallRejected  = "rejected"
	CallStarted   = "started"   // started, not finished (running, or its recorder died)
	CallFinished  = "finished"  // finished success | failure | denied
	CallAmbiguous = "ambiguous" // closed crashed by recovery, awaiting retry or abandon
	CallRetried   = "retry"     // ambiguous, decided retry
	CallAbandoned = "abandoned" // ambiguous, decided abandon
)

// CallView is one tool call of a session.
type CallView struct {
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Turn      string `json:"turn,omitempty"`
	InputHash string `json:"input_hash"`
	InputRef  string `json:"input_ref"`
	Manifest  bool   `json:"manifest,omitempty"`
	Trace     *Span  `json:"trace,omitempty"`
	Decision  string `json:"decision,omitempty"` // the policy's effect
	RuleID    string `json:"rule_id,omitempty"`
	Approval  string `json:"approval,omitempty"` // approve | reject
	Approver  string `json:"approver,omitempty"`
	Status    string `json:"status"`
	Receipt   string `json:"receipt,omitempty"`
	Result    string `json:"result,omitempty"`
	ExitCode  int    `json:"exit_code,omitempty"`
	Output    string `json:"output_hash,omitempty"`
	RetryOf   string `json:"retry_of,omitempty"`
	RetriedBy string `json:"retried_by,omitempty"`
}
