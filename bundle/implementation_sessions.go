package bundle

import "github.com/proofgate/proofgate/kernel/replay"

// sessionCounts counts the sessions of an implementation run's report and
// the tool calls they made (kernel/replay's session view).
func sessionCounts(*replay.Report) (sessions, toolCalls int) {
	return 0, 0
}
