package main

import (
	"fmt"
	"io"

	"github.com/proofgate/proofgate/kernel/replay"
)

// printSessions is the agent part of status and audit: one line per
// session, every pending approval and every ambiguous action with the
// command that decides it, and (audit) one line per action. --json
// carries the same as the report's "sessions".
func printSessions(w io.Writer, rep *replay.Report, audit bool) {
	for _, s := range rep.Sessions {
		state := "ended"
		if s.Open {
			state = "open"
		}
		fmt.Fprintf(w, "session %s (%s): %s, %d turns, %d actions\n", esc(s.ID), esc(s.Agent), state, s.Turns, len(s.Calls))
		for _, a := range s.Calls {
			printAction(w, rep.RunID, a, s.Open, audit)
		}
	}
}

func printAction(w io.Writer, runID string, a replay.CallView, open, audit bool) {
	id, tool := esc(a.ID), esc(a.Tool)
	switch {
	case a.Status == replay.CallPending && !open:
		fmt.Fprintf(w, "never approved: action %s (%s) waited for approval when its session ended; it never ran\n", id, tool)
		return
	case a.Status == replay.CallPending:
		fmt.Fprintf(w, "pending approval: action %s (%s) input %s; a person decides: 'proofgate tool approve %s %s --actor NAME' or 'proofgate tool reject %s %s --actor NAME --reason TEXT'\n",
			id, tool, a.InputHash, runID, id, runID, id)
		return
	case a.Status == replay.CallAmbiguous:
		fmt.Fprintf(w, "ambiguous: action %s (%s) started and never finished (it may have had effects); a person decides: 'proofgate tool retry %s %s --actor NAME' or 'proofgate tool abandon %s %s --actor NAME --reason TEXT'\n",
			id, tool, runID, id, runID, id)
		return
	case a.Status == replay.CallStarted:
		fmt.Fprintf(w, "running: action %s (%s) started and has not finished\n", id, tool)
		return
	}
	if !audit {
		return
	}
	line := fmt.Sprintf("  action %s %s: %s", id, tool, esc(a.Status))
	if a.Result != "" {
		line += fmt.Sprintf(" %s (exit %d)", esc(a.Result), a.ExitCode)
	}
	if a.Decision != "" {
		line += fmt.Sprintf(", policy %s by rule %s", esc(a.Decision), esc(a.RuleID))
	}
	if a.Approval != "" {
		line += fmt.Sprintf(", %s by %s", esc(a.Approval), esc(a.Approver))
	}
	if a.RetryOf != "" {
		line += ", retry of " + esc(a.RetryOf)
	}
	fmt.Fprintf(w, "%s, input %s\n", line, a.InputHash)
}
