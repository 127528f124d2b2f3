package bundle

import "github.com/proofgate/proofgate/kernel/replay"

// sessionCounts counts the sessions of an implementation run's report and
// the tool calls (actions: every call requested, whatever its decision)
// they made.
func sessionCounts(r *replay.Report) (sessions, toolCalls int) {
	for _, s := range r.Sessions {
		toolCalls += len(s.Calls)
	}
	return len(r.Sessions), toolCalls
}
