package checkpoint

import (
	"bytes"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// StatePayloadType is the DSSE payload type of a state checkpoint.
const StatePayloadType = "application/vnd.proofgate.state-checkpoint+json"

// MaxStateRuns bounds the runs one state checkpoint lists.
const MaxStateRuns = 1_000_000

// maxRepoID bounds Repository.ID.
const maxRepoID = 256

// Repository is the identity of the repository a state directory belongs
// to: Root, the root commit of HEAD's first-parent history
// (source.RootCommit), which another repository's history does not have,
// and ID, a repository id given by flag ("" for none), which tells apart
// forks that share their root commit.
type Repository struct {
	Root string `json:"root"`
	ID   string `json:"id"`
}

// StateRun is one run of a state checkpoint: its log held Length events
// ending at Head.
type StateRun struct {
	Run    string `json:"run"`
	Length int    `json:"length"`
	Head   string `json:"head"`
}

// State is the signed statement of a state checkpoint: at Time the state
// directory of Repository held exactly Runs (ascending by run id, byte
// order), each with that chain length and head.
type State struct {
	V          int        `json:"v"`
	Repository Repository `json:"repository"`
	Runs       []StateRun `json:"runs"`
	Time       string     `json:"time"`
}

// Reasons a state checkpoint refuses a state directory.
const (
	// RunMissing: a run the checkpoint lists is not in the state directory.
	RunMissing Reason = "checkpoint-run-missing"
	// ForeignRepository: the checkpoint binds another repository.
	ForeignRepository Reason = "checkpoint-foreign-repository"
	// ChainRefused: a listed run's log does not verify (Err is the
	// *eventlog.ChainError naming file and line).
	ChainRefused Reason = "checkpoint-chain-refused"
)

// StateError is a state directory a state checkpoint refuses; Run names
// the run it concerns ("" for the checkpoint or the repository).
type StateError struct {
	Reason Reason
	Run    string
	Detail string
	Err    error
}

func (e *StateError) Error() string {
	if e.Run != "" {
		return fmt.Sprintf("state checkpoint: %s: run %s: %s", e.Reason, e.Run, e.Detail)
	}
	return fmt.Sprintf("state checkpoint: %s: %s", e.Reason, e.Detail)
}

// Unwrap returns the underlying error.
func (e *StateError) Unwrap() error { return e.Err }

var (
	rootRE  = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	runIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
)

func (s *State) validate() error {
	switch {
	case s.V != Version:
		return fmt.Errorf("v: %d, want %d", s.V, Version)
	case !rootRE.MatchString(s.Repository.Root):
		return fmt.Errorf("repository.root: not a commit id")
	case len(s.Repository.ID) > maxRepoID || !utf8.ValidString(s.Repository.ID) || bytes.ContainsFunc([]byte(s.Repository.ID), func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("repository.id: longer than %d bytes or not printable UTF-8", maxRepoID)
	case len(s.Runs) > MaxStateRuns:
		return fmt.Errorf("runs: more than %d", MaxStateRuns)
	}
	for i, r := range s.Runs {
		switch {
		case !runIDRE.MatchString(r.Run):
			return fmt.Errorf("runs[%d].run: not a run id", i)
		case i > 0 && r.Run <= s.Runs[i-1].Run:
			return fmt.Errorf("runs[%d].run: %s not after %s (ascending, no duplicates)", i, r.Run, s.Runs[i-1].Run)
		case r.Length < 1:
			return fmt.Errorf("runs[%d].length: %d, want >= 1", i, r.Length)
		case !headRE.MatchString(r.Head):
			return fmt.Errorf("runs[%d].head: not sha256:<64 hex>", i)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, s.Time); err != nil {
		return fmt.Errorf("time: not RFC 3339")
	}
	return nil
}

// StatePayload returns the exact bytes signed: the RFC 8785 canonical
// JSON of s (runs must already be in order).
func StatePayload(s State) ([]byte, error) {
	if s.Runs == nil {
		s.Runs = []StateRun{}
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("state checkpoint: %w", err)
	}
	return canon.Marshal(&s)
}

// SignState returns the state checkpoint envelope (canonical JSON).
func SignState(sg envelope.Signer, s State) ([]byte, error) {
	p, err := StatePayload(s)
	if err != nil {
		return nil, err
	}
	return envelope.Sign(sg, StatePayloadType, p)
}

// VerifiedState is a state checkpoint whose signature and key were
// accepted.
type VerifiedState struct {
	State
	KeyID string
}

// VerifyState opens the envelope with a key from vs, decodes the state
// checkpoint (canonical JSON required) and checks the key's validity at
// its time. Refusals are *Error with reason Invalid.
func VerifyState(b []byte, vs envelope.Verifiers) (*VerifiedState, error) {
	payload, k, err := envelope.Open(b, StatePayloadType, "state checkpoint", vs)
	if err != nil {
		return nil, openError(err)
	}
	var s State
	if err := strictjson.Decode(payload, &s); err != nil {
		return nil, &Error{Reason: Invalid, Detail: "payload: " + err.Error()}
	}
	if err := s.validate(); err != nil {
		return nil, &Error{Reason: Invalid, Detail: "payload: " + err.Error()}
	}
	if c, err := canon.Transform(payload); err != nil || !bytes.Equal(c, payload) {
		return nil, &Error{Reason: Invalid, Detail: "payload is not canonical JSON"}
	}
	at, _ := time.Parse(time.RFC3339Nano, s.Time)
	if err := k.CheckAt(at, ""); err != nil {
		if ke, ok := err.(*trust.KeyError); !ok || ke.Reason != trust.IdentityMismatch {
			return nil, &Error{Reason: Invalid, Detail: err.Error(), Err: err}
		}
	}
	return &VerifiedState{State: s, KeyID: k.KeyID()}, nil
}

// RunChain is what a verifier found of one run in the state directory:
// Err, a refusal of its log; else Length events, and At, the hash of the
// event at the checkpoint's length ("" when the log is shorter).
type RunChain struct {
	Length int
	At     string
	// Time is the time the event at the checkpoint's length records.
	Time string
	Err  error
}

// MatchState checks a verified state checkpoint against a state directory
// of repository repo: look returns what the directory holds of a run (ok
// false when it has no such run). The first refusal wins, in this order:
// another repository, then each listed run in order (missing, its chain
// refused, truncated, rewritten, the checkpoint's time before the event
// it covers: signing-time-implausible). Runs the directory holds beyond the
// listed ones are not refusals: they came after the checkpoint.
func MatchState(s *State, repo Repository, look func(run string, length int) (RunChain, bool)) error {
	if s.Repository != repo {
		return &StateError{Reason: ForeignRepository, Detail: fmt.Sprintf("the checkpoint binds repository root %s id %q; this repository is root %s id %q",
			s.Repository.Root, s.Repository.ID, repo.Root, repo.ID)}
	}
	for _, r := range s.Runs {
		c, ok := look(r.Run, r.Length)
		switch {
		case !ok:
			return &StateError{Reason: RunMissing, Run: r.Run, Detail: fmt.Sprintf("the checkpoint lists it (%d events); the state directory has no such run", r.Length)}
		case c.Err != nil:
			return &StateError{Reason: ChainRefused, Run: r.Run, Detail: c.Err.Error(), Err: c.Err}
		case c.Length < r.Length:
			return &StateError{Reason: Truncated, Run: r.Run, Detail: fmt.Sprintf("the log holds %d events, the checkpoint signed %d", c.Length, r.Length)}
		case c.At != r.Head:
			return &StateError{Reason: Rewritten, Run: r.Run, Detail: fmt.Sprintf("event %d has hash %s, the checkpoint signed %s", r.Length, c.At, r.Head)}
		}
		if err := matchTime(s.Time, c.Time, r.Length); err != nil {
			e := err.(*Error)
			return &StateError{Reason: e.Reason, Run: r.Run, Detail: e.Detail}
		}
	}
	return nil
}
