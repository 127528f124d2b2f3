package app

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/record"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/exit"
)

// EventsVerified is what verifying a run's event log found; its JSON is
// 'proofgate events verify --json'.
type EventsVerified struct {
	OK     bool   `json:"ok"`
	RunID  string `json:"run_id"`
	Length int    `json:"length,omitempty"`
	Head   string `json:"head,omitempty"`
	Reason string `json:"reason,omitempty"`
	// File is the log file the refused line is in (a sealed segment
	// events.NNNNNNNN.ndjson or the active events.ndjson); Line counts
	// in it.
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Proved names what an ok result established; NotProved says what it
	// did not, and which command does.
	Proved    []string `json:"proved,omitempty"`
	NotProved string   `json:"not_proved,omitempty"`
	// Checkpoint is what a verified checkpoint covered.
	Checkpoint *CheckpointCover `json:"checkpoint,omitempty"`
}

// CheckpointCover is what a verified checkpoint covered: the first Length
// events of run RunID, ending at Head, signed at Time by KeyID.
type CheckpointCover struct {
	RunID  string `json:"run_id"`
	Length int    `json:"length"`
	Head   string `json:"head"`
	Time   string `json:"time"`
	KeyID  string `json:"key_id"`
}

// What events verify proves: the chain, never the history it chains.
var (
	provedChain      = []string{"chain (every line canonical, linked to the one before, seq without gaps)", "binding (one run, contract and source on every line)"}
	provedCheckpoint = "checkpoint (the first %d events are the ones the signed checkpoint names: none rewritten or removed)"
	notProvedChain   = "a history forged and re-chained from line 1, or a log cut back after any line, passes a chain check; 'proofgate status RUN --audit' replays the log against the contract and run.json, and '--checkpoint FILE --trust trust.json' detects rewriting or truncation before a signed checkpoint"
	notProvedAfterCp = "events after the checkpoint are proved by the chain only (a later checkpoint covers them); 'proofgate status RUN --audit' replays the log against the contract"
)

// VerifyEvents verifies the event log of run id ("latest" too) of the
// state directory, and with cpFile and trustFile (both or neither) checks
// it against that signed checkpoint. A run that cannot be resolved is
// returned as it is (no result); unusable inputs are a usage error beside
// the refused result; a log that does not verify is a result, not OK.
func VerifyEvents(state, id, cpFile, trustFile string) (*EventsVerified, error) {
	store := run.NewStore(state)
	id, err := store.Resolve(id)
	if err != nil {
		return nil, err
	}
	return verifyLog(store.Path(id), id, cpFile, trustFile)
}

func verifyLog(dir, id, cpFile, trustFile string) (*EventsVerified, error) {
	res := &EventsVerified{RunID: id}
	if (cpFile == "") != (trustFile == "") {
		return res, exit.Wrap(exit.Usage, errors.New("--checkpoint and --trust go together"))
	}
	events, sum, err := readLog(dir, cpFile != "")
	if err != nil {
		res.refuse(err)
		return res, nil
	}
	res.OK, res.Length, res.Head = true, sum.Len, sum.Head
	res.Proved, res.NotProved = provedChain, notProvedChain
	if cpFile == "" {
		return res, nil
	}
	cover, reason, detail, uerr := verifyCheckpoint(cpFile, trustFile, events)
	switch {
	case uerr != nil:
		res.OK, res.Reason, res.Detail = false, "unusable-input", uerr.Error()
		res.Proved, res.NotProved = nil, ""
		return res, exit.Wrap(exit.Usage, uerr)
	case reason != "":
		res.OK, res.Reason, res.Detail = false, reason, detail
		res.Proved, res.NotProved = nil, ""
	default:
		res.Proved = append(slices.Clone(provedChain), fmt.Sprintf(provedCheckpoint, cover.Length))
		res.Checkpoint = cover
		res.NotProved = notProvedAfterCp
	}
	return res, nil
}

// readLog reads the whole log (whole, to match against a checkpoint) or
// only verifies it.
func readLog(dir string, whole bool) ([]eventlog.Event, eventlog.Summary, error) {
	if !whole {
		sum, err := run.VerifyLog(dir)
		return nil, sum, err
	}
	events, err := run.ReadLog(dir)
	sum := eventlog.Summary{Len: len(events)}
	if len(events) > 0 {
		sum.Head = events[len(events)-1].Hash
	}
	return events, sum, err
}

// refuse records why a log did not verify.
func (res *EventsVerified) refuse(err error) {
	var ce *eventlog.ChainError
	var re *retention.Error
	switch {
	case errors.As(err, &ce):
		res.Reason, res.File, res.Line, res.Detail = string(ce.Reason), ce.File, ce.Line, ce.Detail
	case errors.As(err, &re):
		res.Reason, res.Detail = string(re.Reason), re.Detail
	default:
		res.Reason, res.Detail = "unreadable", err.Error()
	}
}

// verifyCheckpoint checks events against a signed checkpoint. It returns
// what the checkpoint covered, or a refusal reason and detail, or an error
// when the inputs are unusable.
func verifyCheckpoint(cpFile, trustFile string, events []eventlog.Event) (cover *CheckpointCover, reason, detail string, err error) {
	store, err := trust.Load(trustFile)
	if err != nil {
		return nil, "", "", err
	}
	cp, err := checkpoint.ReadFile(cpFile)
	if err != nil {
		return nil, "", "", err
	}
	v, err := checkpoint.Verify(cp, store)
	if err == nil {
		err = checkpoint.Match(&v.Checkpoint, events)
	}
	if err != nil {
		var ce *checkpoint.Error
		if errors.As(err, &ce) {
			return nil, string(ce.Reason), ce.Detail, nil
		}
		return nil, string(checkpoint.Invalid), err.Error(), nil
	}
	return &CheckpointCover{RunID: v.Run, Length: v.Length, Head: v.Head, Time: v.Time, KeyID: v.KeyID}, "", "", nil
}

// StateVerified is what verifying every run of a state directory found;
// its JSON is 'proofgate events verify --all --json'.
type StateVerified struct {
	OK         bool                   `json:"ok"`
	Runs       []*EventsVerified      `json:"runs"`
	Checkpoint *StateCover            `json:"checkpoint,omitempty"`
	Uncovered  []string               `json:"uncovered,omitempty"`
	Reason     string                 `json:"reason,omitempty"`
	RunID      string                 `json:"run_id,omitempty"`
	File       string                 `json:"file,omitempty"`
	Line       int                    `json:"line,omitempty"`
	Detail     string                 `json:"detail,omitempty"`
	Repository *checkpoint.Repository `json:"repository,omitempty"`
}

// StateCover is what a verified state checkpoint covered.
type StateCover struct {
	Runs       int                   `json:"runs"`
	Repository checkpoint.Repository `json:"repository"`
	Time       string                `json:"time"`
	KeyID      string                `json:"key_id"`
}

// VerifyStateChains verifies the event log of every run of the state
// directory; the first that does not verify refuses the result. A state
// directory that cannot be listed is returned as it is.
func VerifyStateChains(state string) (*StateVerified, error) {
	store := run.NewStore(state)
	ids, err := store.List()
	if err != nil {
		return nil, err
	}
	res := &StateVerified{OK: true, Runs: []*EventsVerified{}}
	for _, id := range ids {
		r, _ := verifyLog(store.Path(id), id, "", "") // no checkpoint: no usage error
		if !r.OK && res.OK {
			res.OK, res.Reason, res.RunID, res.File, res.Line, res.Detail = false, r.Reason, id, r.File, r.Line, r.Detail
		}
		r.Proved, r.NotProved = nil, ""
		res.Runs = append(res.Runs, r)
	}
	return res, nil
}

// CheckCheckpoint checks the state directory against the state checkpoint
// in cpFile, signed by a key of the trust store in trustFile, for the
// repository repo: a refusal makes res not OK. Unusable inputs are a
// usage error; another failure is returned as it is.
func (res *StateVerified) CheckCheckpoint(state string, repo checkpoint.Repository, cpFile, trustFile string) error {
	res.Repository = &repo
	ts, err := trust.Load(trustFile)
	if err != nil {
		return exit.Wrap(exit.Usage, err)
	}
	env, err := checkpoint.ReadFile(cpFile)
	if err != nil {
		return exit.Wrap(exit.Usage, err)
	}
	rep, err := record.VerifyState(state, env, ts, repo)
	var se *checkpoint.StateError
	var ce *checkpoint.Error
	var le *eventlog.ChainError
	switch {
	case errors.As(err, &se):
		res.OK, res.Reason, res.RunID, res.Detail = false, string(se.Reason), se.Run, se.Detail
		if errors.As(err, &le) {
			res.File, res.Line = le.File, le.Line
		}
	case errors.As(err, &ce):
		res.OK, res.Reason, res.Detail = false, string(ce.Reason), ce.Detail
	case err != nil:
		return err
	default:
		res.Checkpoint = &StateCover{Runs: len(rep.Runs), Repository: rep.Repository, Time: rep.Time, KeyID: rep.KeyID}
		res.Uncovered = rep.Uncovered
	}
	return nil
}

// Unlock removes the writer lock of a run whose writer is provably dead
// and kills the check processes it recorded (run.Unlock). A refusal (no
// lock, a lock that may not be broken) is exit.Refused with no result; a
// failure before the lock was removed is returned as it is with no
// result; one after it (a process that could not be killed) beside the
// result.
func Unlock(state, id, actor string, olderThan time.Duration, now time.Time) (*run.Unlocked, error) {
	u, err := run.Unlock(state, id, actor, olderThan, now)
	var refused *lock.BreakRefused
	switch {
	case errors.Is(err, run.ErrNoLock), errors.As(err, &refused):
		return nil, exit.Wrap(exit.Refused, err)
	case u.Owner.PID == 0 && err != nil:
		return nil, err
	}
	return &u, err
}
