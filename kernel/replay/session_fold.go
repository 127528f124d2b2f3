package replay

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// Audit reasons of the session rules (docs/SPEC.md §5.1).
const (
	ReasonSessionState     AuditReason = "session-outside-implementing" // a session or tool event while the run is not IMPLEMENTING
	ReasonSessionOpen      AuditReason = "session-open"                 // a second open session, or leaving IMPLEMENTING with one open
	ReasonUnknownSession   AuditReason = "unknown-session"              // an event for a session never started, or closed
	ReasonTurn             AuditReason = "turn-order"                   // a turn never started, finished twice, or out of sequence
	ReasonUnknownAction    AuditReason = "unknown-action"               // a tool event for an action never requested
	ReasonUndecided        AuditReason = "start-without-decision"       // tool.started with no decision that allowed it
	ReasonDenied           AuditReason = "start-after-denial"           // tool.started after block or reject
	ReasonApprovalBinding  AuditReason = "approval-binding"             // a human decision bound to another input hash, or not applicable
	ReasonSelfApproval     AuditReason = "self-approval"                // a human decision by the session's own agent
	ReasonPolicyMismatch   AuditReason = "policy-mismatch"              // a policy decision the contract's rules do not give
	ReasonReceipt          AuditReason = "receipt"                      // two starts, a finish without a start, two finishes, a receipt that does not match
	ReasonUnfinished       AuditReason = "unfinished-action"            // a session ended or IMPLEMENTING left with an action started and not finished
	ReasonAmbiguous        AuditReason = "ambiguous-action"             // a new call, an end or a transition while an ambiguous action is unresolved
	ReasonSessionOwner     AuditReason = "session-owner"                // a receipt by another owner than the session's
	ReasonSessionBadFields AuditReason = "session-fields"               // an id, digest or name of the wrong shape
)

var (
	sessionRE = regexp.MustCompile(`^s-[0-9a-f]{12}$`)
	actionRE  = regexp.MustCompile(`^a-[0-9a-f]{12}$`)
	receiptRE = regexp.MustCompile(`^r-[0-9a-f]{12}$`)
	toolRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	hex32RE   = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hex16RE   = regexp.MustCompile(`^[0-9a-f]{16}$`)
	hex2RE    = regexp.MustCompile(`^[0-9a-f]{2}$`)
)

// MaxAgent bounds a session's agent identity in bytes.
const MaxAgent = 200

type sessionState struct {
	id, agent string
	owner     Owner
	open      bool
	turns     map[string]bool // turn id → still open
	nturns    int
	actions   []string
	// The admission index (session_index.go): kept as events apply, so
	// that a call's admission costs the same after 10 or 10 000 calls.
	latest  map[string]string // tool + "\x00" + input hash → latest action
	running map[string]bool   // started, not finished
	crashed map[string]bool   // closed crashed, not decided retry or abandon
}

type actionState struct {
	v         CallView
	session   string
	policy    string // the policy's effect
	human     string // approve | reject
	started   bool
	finished  bool
	progress  int
	trace     *Span
	recover   bool // listed ambiguous by a session.resumed: recovery may close it
	resolved  string
	retriedBy string
}

type sessionFold struct {
	sessions  map[string]*sessionState
	order     []string
	actions   map[string]*actionState
	receipts  map[string]bool
	open      string            // the open session, "" when none
	manifests map[string]string // manifest input ref → input hash
}

func (f *Folder) sess() *sessionFold {
	if f.s == nil {
		f.s = &sessionFold{sessions: map[string]*sessionState{}, actions: map[string]*actionState{},
			receipts: map[string]bool{}, manifests: map[string]string{}}
	}
	return f.s
}

// inSession refuses a session or tool event while the run is not
// IMPLEMENTING.
func (f *Folder) inSession(line int, typ string) error {
	if f.state != Implementing {
		return bad(line, ReasonSessionState, "%s while the run is %s", typ, f.state)
	}
	return nil
}

// openSession returns session id, refusing one never started or closed.
func (f *Folder) openSession(line int, id string) (*sessionState, error) {
	s := f.sess().sessions[id]
	if s == nil || !s.open {
		return nil, bad(line, ReasonUnknownSession, "session %q is not open", id)
	}
	return s, nil
}

func checkOwner(line int, o Owner, what string) error {
	if o.PID <= 0 || o.Start == 0 || o.BootID == "" || printable.Check(what, o.Host) != nil || o.Created.IsZero() {
		return bad(line, ReasonSessionBadFields, "%s is not a complete owner (pid, start, boot_id, host, created)", what)
	}
	return nil
}

func (f *Folder) applySessionStarted(line int, e eventlog.Event, d SessionStartedData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	sf := f.sess()
	switch {
	case !sessionRE.MatchString(d.Session):
		return bad(line, ReasonSessionBadFields, "session id %q is not s-<12 hex>", d.Session)
	case sf.sessions[d.Session] != nil:
		return bad(line, ReasonSessionBadFields, "session %s started twice", d.Session)
	case sf.open != "":
		return bad(line, ReasonSessionOpen, "session %s started while session %s is open", d.Session, sf.open)
	case len(d.Agent) > MaxAgent || printable.Check("agent", d.Agent) != nil:
		return bad(line, ReasonSessionBadFields, "agent identity is empty, longer than %d bytes or not printable", MaxAgent)
	}
	if err := checkOwner(line, d.Owner, "owner"); err != nil {
		return err
	}
	if f.dry {
		return nil
	}
	sf.sessions[d.Session] = &sessionState{id: d.Session, agent: d.Agent, owner: d.Owner, open: true, turns: map[string]bool{},
		latest: map[string]string{}, running: map[string]bool{}, crashed: map[string]bool{}}
	sf.order = append(sf.order, d.Session)
	sf.open = d.Session
	return nil
}

// ambiguous lists session s's actions that started and are not resolved:
// unfinished, or closed crashed and awaiting retry or abandon.
func (f *Folder) ambiguous(s *sessionState) []string {
	out := sortedKeys(s.running)
	out = append(out, sortedKeys(s.crashed)...)
	slices.Sort(out)
	return out
}

func (f *Folder) applySessionResumed(line int, e eventlog.Event, d SessionResumedData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	s, err := f.openSession(line, d.Session)
	if err != nil {
		return err
	}
	if err := checkOwner(line, d.Owner, "owner"); err != nil {
		return err
	}
	switch {
	case !d.PreviousOwner.same(s.owner):
		return bad(line, ReasonSessionOwner, "session.resumed names previous owner pid %d, the session's owner is pid %d", d.PreviousOwner.PID, s.owner.PID)
	case d.Owner.same(s.owner):
		return bad(line, ReasonSessionOwner, "session.resumed by its own owner (pid %d)", d.Owner.PID)
	}
	want := f.ambiguous(s)
	if d.Ambiguous == nil || !slices.Equal(d.Ambiguous, want) {
		return bad(line, ReasonAmbiguous, "session.resumed lists ambiguous %v, the replay finds %v", d.Ambiguous, want)
	}
	if f.dry {
		return nil
	}
	for _, id := range want {
		f.s.actions[id].recover = true
	}
	s.owner = d.Owner
	return nil
}

func (f *Folder) applySessionEnded(line int, e eventlog.Event, d SessionEndedData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	s, err := f.openSession(line, d.Session)
	if err != nil {
		return err
	}
	if err := f.settled(line, s, "session.ended"); err != nil {
		return err
	}
	if printable.CheckText("reason", d.Reason) != nil {
		return bad(line, ReasonSessionBadFields, "session.ended reason is not printable text")
	}
	if f.dry {
		return nil
	}
	s.open, f.s.open = false, ""
	return nil
}

// settled refuses what while session s has an action started and not
// finished, or an ambiguous action not yet decided.
func (f *Folder) settled(line int, s *sessionState, what string) error {
	if ids := sortedKeys(s.running); len(ids) > 0 {
		return bad(line, ReasonUnfinished, "%s with action %s started and not finished", what, ids[0])
	}
	if ids := sortedKeys(s.crashed); len(ids) > 0 {
		return bad(line, ReasonAmbiguous, "%s with ambiguous action %s not decided (retry or abandon)", what, ids[0])
	}
	return nil
}

// leaveImplementing refuses a state change out of IMPLEMENTING while a
// session is open.
func (f *Folder) leaveImplementing(line int, to State) error {
	if f.s == nil || f.s.open == "" {
		return nil
	}
	s := f.s.sessions[f.s.open]
	if err := f.settled(line, s, fmt.Sprintf("IMPLEMENTING → %s", to)); err != nil {
		return err
	}
	return bad(line, ReasonSessionOpen, "IMPLEMENTING → %s while session %s is open", to, s.id)
}

func (f *Folder) applyTurnStarted(line int, e eventlog.Event, d TurnData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	s, err := f.openSession(line, d.Session)
	if err != nil {
		return err
	}
	if want := fmt.Sprintf("t-%d", s.nturns+1); d.Turn != want {
		return bad(line, ReasonTurn, "turn %q started, the session's next turn is %s", d.Turn, want)
	}
	if f.dry {
		return nil
	}
	s.nturns++
	s.turns[d.Turn] = true
	return nil
}

func (f *Folder) applyTurnFinished(line int, e eventlog.Event, d TurnData) error {
	if err := f.inSession(line, e.Type); err != nil {
		return err
	}
	s, err := f.openSession(line, d.Session)
	if err != nil {
		return err
	}
	if !s.turns[d.Turn] {
		return bad(line, ReasonTurn, "turn %q finished, but it is not a started, unfinished turn of session %s", d.Turn, d.Session)
	}
	if f.dry {
		return nil
	}
	s.turns[d.Turn] = false
	return nil
}

// TrySession checks that a session, turn or tool event e would replay as
// line line, without applying it: internal/run refuses an event before it is
// in the log rather than after. Other event types are refused.
func (f *Folder) TrySession(line int, e eventlog.Event) error {
	t, ok := eventTypes[e.Type]
	if !ok || t.writers&WriterSession == 0 {
		return bad(line, ReasonUnknownEvent, "%q is not a session event", e.Type)
	}
	f.dry = true
	defer func() { f.dry = false }()
	return t.apply(f, line, e)
}
