package app

import (
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// WaitingCall names one call that waits for a person. Its JSON keeps the
// wire member "action".
type WaitingCall struct {
	Session   string `json:"session"`
	Call      string `json:"action"`
	Tool      string `json:"tool"`
	InputHash string `json:"input_hash"`
}

// StatusDoc is what status and audit print with --json: the reconciled
// status, and the calls that wait for a person (also in "sessions"): a
// pending approval of an open session, an ambiguous call.
type StatusDoc struct {
	*run.Status
	PendingApprovals []WaitingCall `json:"pending_approvals,omitempty"`
	Ambiguous        []WaitingCall `json:"ambiguous,omitempty"`
}

// NewStatusDoc is st's document, with the calls that wait for a person.
func NewStatusDoc(st *run.Status) StatusDoc {
	d := StatusDoc{Status: st}
	if st.Report == nil {
		return d
	}
	for _, s := range st.Sessions {
		for _, a := range s.Calls {
			w := WaitingCall{Session: s.ID, Call: a.ID, Tool: a.Tool, InputHash: a.InputHash}
			switch {
			case a.Status == replay.CallPending && s.Open:
				d.PendingApprovals = append(d.PendingApprovals, w)
			case a.Status == replay.CallAmbiguous:
				d.Ambiguous = append(d.Ambiguous, w)
			}
		}
	}
	return d
}
