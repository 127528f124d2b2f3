package handoff

import "fmt"

// Reason is why a job did not import a handed-off run (the review job then
// re-runs the checks).
type Reason string

// Reasons of a refused hand-off.
const (
	NoKey         Reason = "no-signing-key"       // key mode without a key: nothing to verify the hand-off with
	NotFound      Reason = "run-not-found"        // no unexpired hand-off for the head
	Fork          Reason = "run-from-fork"        // the artifact's workflow run came from another repository
	GitHubAPI     Reason = "github-api"           // listing or downloading failed
	Malformed     Reason = "run-malformed"        // zip, archive, statement or subjects
	BadSignature  Reason = "signature-invalid"    // not signed by the job's key
	OtherHead     Reason = "other-head"           // signed for another PR head or PR
	OtherContract Reason = "other-contract"       // ran under another contract than the base's
	OtherRepo     Reason = "other-repository"     // ran in another repository
	Audit         Reason = "audit-failed"         // the files do not replay to what the statement says
	NotAwaiting   Reason = "not-awaiting"         // the run is not AWAITING_APPROVAL
	Checkout      Reason = "checkout-differs"     // the review job's checkout is not the commit the run tested
	Exists        Reason = "run-exists-different" // a different run with that id is in the state directory
	// SigningTime: signed_at is before the run's last event (the
	// export writes that time; the log rules out an earlier one).
	SigningTime Reason = "signing-time-implausible"
)

// Error is a refused hand-off.
type Error struct {
	Reason Reason
	Detail string
}

func (e *Error) Error() string { return string(e.Reason) + ": " + e.Detail }

// Refuse returns the refusal for reason r, its detail formatted.
func Refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}
