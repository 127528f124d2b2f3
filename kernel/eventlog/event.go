package eventlog

import (
	"encoding/json"
	"fmt"

	"github.com/proofgate/proofgate/kernel/exit"
)

// Source is the code a run is bound to.
type Source struct {
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
}

// Binding is what every line of one run's log must carry.
type Binding struct {
	Run      string
	Source   Source
	Contract string // "sha256:<hex>"
}

// Event is one line of events.ndjson.
type Event struct {
	V        int             `json:"v"`
	Seq      uint64          `json:"seq"`
	Run      string          `json:"run"`
	Type     string          `json:"type"`
	Time     string          `json:"time"` // RFC 3339 with nanoseconds, UTC
	Source   Source          `json:"source"`
	Contract string          `json:"contract"`
	Data     json.RawMessage `json:"data"`
	Prev     *string         `json:"prev"`
	Hash     string          `json:"hash"`
}

// Reason is the typed cause of a refused log.
type Reason string

// Reasons a log is refused.
const (
	BrokenLink            Reason = "broken-link"
	SeqGap                Reason = "seq-gap"
	ForeignBinding        Reason = "foreign-binding"
	UnchainedAfterChained Reason = "unchained-after-chained"
	Malformed             Reason = "malformed"
	TornTail              Reason = "torn-tail"
)

// ChainError is a refused log: the reason and the 1-based line it names.
// File is the base name of the file of a log read by path (a sealed
// segment or the active file), "" for a log read from a stream; Line is
// then the line in that file.
type ChainError struct {
	Reason Reason
	File   string
	Line   int
	Detail string
}

func (e *ChainError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s line %d: %s: %s", e.File, e.Line, e.Reason, e.Detail)
	}
	return fmt.Sprintf("events line %d: %s: %s", e.Line, e.Reason, e.Detail)
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *ChainError) Is(target error) bool { return target == exit.Refused }
