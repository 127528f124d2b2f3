// Package checkpoint signs and verifies checkpoints of a run's event chain:
// a DSSE envelope over {v, run, length, head, time} that proves the log had
// that head at that length. A later log whose entry at the checkpoint's
// length has another hash was rewritten (even if every later link was
// recomputed); a log shorter than the checkpoint was truncated.
//
// In a run directory checkpoints live in checkpoints/<length, 20 digits>.dsse.json;
// the latest is the one with the greatest length. docs/SPEC.md gives the
// exact bytes.
package checkpoint

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// PayloadType is the DSSE payload type of a checkpoint.
const PayloadType = "application/vnd.proofgate.checkpoint+json"

// Dir is the run-directory subdirectory holding checkpoints.
const Dir = "checkpoints"

// Version is the checkpoint format version.
const Version = 1

// Checkpoint is the signed statement: run Run's log had Length events and
// its last event's hash was Head at Time.
type Checkpoint struct {
	V      int    `json:"v"`
	Run    string `json:"run"`
	Length int    `json:"length"`
	Head   string `json:"head"`
	Time   string `json:"time"` // RFC 3339, UTC
}

// Reason is the typed cause of a refused checkpoint or log.
type Reason string

// Reasons.
const (
	Rewritten  Reason = "checkpoint-rewritten"
	Truncated  Reason = "checkpoint-truncated"
	ForeignRun Reason = "checkpoint-foreign-run"
	Invalid    Reason = "checkpoint-invalid"
	// SigningTime: the checkpoint's time is before the log's own time of
	// the event it covers (the bundle reason signing-time-implausible).
	SigningTime Reason = "signing-time-implausible"
)

// Error is a refused checkpoint or a log that contradicts it.
type Error struct {
	Reason Reason
	Detail string
	Err    error // a *trust.KeyError when the key was refused
}

func (e *Error) Error() string { return fmt.Sprintf("checkpoint: %s: %s", e.Reason, e.Detail) }

// Unwrap returns the key error, if any.
func (e *Error) Unwrap() error { return e.Err }

var headRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func (c *Checkpoint) validate() error {
	switch {
	case c.V != Version:
		return fmt.Errorf("v: %d, want %d", c.V, Version)
	case c.Run == "" || len(c.Run) > 128:
		return fmt.Errorf("run: empty or longer than 128 bytes")
	case c.Length < 1:
		return fmt.Errorf("length: %d, want >= 1", c.Length)
	case !headRE.MatchString(c.Head):
		return fmt.Errorf("head: not sha256:<64 hex>")
	}
	if _, err := time.Parse(time.RFC3339Nano, c.Time); err != nil {
		return fmt.Errorf("time: not RFC 3339")
	}
	return nil
}

// Payload returns the exact bytes signed inside the envelope: the RFC 8785
// canonical JSON of c.
func Payload(c Checkpoint) ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return canon.Marshal(&c)
}

// Sign returns the checkpoint envelope (canonical JSON).
func Sign(s envelope.Signer, c Checkpoint) ([]byte, error) {
	p, err := Payload(c)
	if err != nil {
		return nil, err
	}
	return envelope.Sign(s, PayloadType, p)
}

// FileName is the name of the checkpoint at length n inside Dir.
func FileName(n int) string { return fmt.Sprintf("%020d.dsse.json", n) }

// Verified is a checkpoint whose signature and key were accepted.
type Verified struct {
	Checkpoint
	KeyID string
}

// Verify opens the envelope with a key from vs (envelope.Open), decodes
// the checkpoint and checks the key's validity at the checkpoint's time.
func Verify(b []byte, vs envelope.Verifiers) (*Verified, error) {
	payload, k, err := envelope.Open(b, PayloadType, "checkpoint", vs)
	if err != nil {
		return nil, openError(err)
	}
	var c Checkpoint
	if err := strictjson.Decode(payload, &c); err != nil {
		return nil, &Error{Reason: Invalid, Detail: "payload: " + err.Error()}
	}
	if err := c.validate(); err != nil {
		return nil, &Error{Reason: Invalid, Detail: "payload: " + err.Error()}
	}
	at, _ := time.Parse(time.RFC3339Nano, c.Time)
	if err := k.CheckAt(at, ""); err != nil {
		if ke, ok := err.(*trust.KeyError); ok && ke.Reason == trust.IdentityMismatch {
			// A checkpoint names no repository; identity is checked on bundles.
		} else {
			return nil, &Error{Reason: Invalid, Detail: err.Error(), Err: err}
		}
	}
	return &Verified{Checkpoint: c, KeyID: k.KeyID()}, nil
}

// openError turns envelope.Open's refusal into an Invalid checkpoint; a
// refused key stays reachable through Err.
func openError(err error) error {
	var oe *envelope.Error
	if !errors.As(err, &oe) {
		return &Error{Reason: Invalid, Detail: err.Error(), Err: err}
	}
	switch oe.Reason {
	case envelope.Malformed:
		return &Error{Reason: Invalid, Detail: oe.Err.Error()}
	case envelope.UnknownKey:
		return &Error{Reason: Invalid, Detail: oe.Err.Error(), Err: oe.Err}
	}
	return &Error{Reason: Invalid, Detail: "signature does not verify with key " + oe.KeyID}
}

// VerifyLog verifies checkpoint cp with vs and checks it against a log
// whose chain the caller has already verified (eventlog.Read/Verify): the
// log must belong to the checkpoint's run, hold at least Length events,
// and its event number Length must have the checkpoint's head hash.
func VerifyLog(cp []byte, vs envelope.Verifiers, events []eventlog.Event) error {
	v, err := Verify(cp, vs)
	if err != nil {
		return err
	}
	return Match(&v.Checkpoint, events)
}

// Match checks an already verified checkpoint against a log.
func Match(c *Checkpoint, events []eventlog.Event) error {
	if len(events) > 0 && events[0].Run != c.Run {
		return &Error{Reason: ForeignRun, Detail: fmt.Sprintf("checkpoint is for run %s, the log is run %s", c.Run, events[0].Run)}
	}
	if len(events) < c.Length {
		return &Error{Reason: Truncated, Detail: fmt.Sprintf("the log holds %d events, the checkpoint signed %d", len(events), c.Length)}
	}
	if got := events[c.Length-1].Hash; got != c.Head {
		return &Error{Reason: Rewritten, Detail: fmt.Sprintf("event %d has hash %s, the checkpoint signed %s", c.Length, got, c.Head)}
	}
	return matchTime(c.Time, events[c.Length-1].Time, c.Length)
}

// matchTime refuses (SigningTime) a checkpoint time before the log's own
// time of event n, the last event it covers: the key's status was judged
// at c.Time, which the signer chose; the log says it cannot be earlier.
func matchTime(signed, event string, n int) error {
	at, err := time.Parse(time.RFC3339Nano, signed)
	if err != nil {
		return &Error{Reason: Invalid, Detail: "time: not RFC 3339"}
	}
	ev, err := time.Parse(time.RFC3339Nano, event)
	if err != nil {
		return &Error{Reason: Invalid, Detail: fmt.Sprintf("event %d's time %q is not RFC 3339", n, event)}
	}
	if at.Before(ev) {
		return &Error{Reason: SigningTime, Detail: fmt.Sprintf("signed at %s, before event %d it covers was written at %s", signed, n, event)}
	}
	return nil
}
