package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// StateDir is where state checkpoints are kept, relative to the state
// directory: inside runs/, which the work-tree digest excludes (a file
// elsewhere in .proofgate would make the work tree dirty), hidden, so no
// reader takes it for a run (run ids never start with a dot).
const StateDir = "runs/.state-checkpoints"

// StateFileName is the name of a state checkpoint signed at t inside
// StateDir: state-<unix nanoseconds, 20 digits>.dsse.json.
func StateFileName(t time.Time) string { return fmt.Sprintf("state-%020d.dsse.json", t.UnixNano()) }

// StateRecorded is a state checkpoint written to the state directory.
type StateRecorded struct {
	checkpoint.State
	KeyID    string
	Path     string
	Envelope []byte
	// TornTail are the runs whose log ended in an incomplete line (a
	// writer appending, or killed mid-append): each is signed at the
	// complete, verified events before it.
	TornTail []string
}

// State signs a state checkpoint over every run in stateDir, bound to
// repository repo, and writes it to <stateDir>/runs/.state-checkpoints/.
// Every run's
// log is verified whole first (sealed segments included): a log that does
// not verify refuses the checkpoint (*checkpoint.StateError, reason
// checkpoint-chain-refused, naming the run), so nothing signed vouches for
// a broken chain. Runs are read without their writer locks: a run a live
// writer appends to is signed at a verified prefix, which stays true. So
// is a log whose active file ends in an incomplete line (the write a live
// writer is making, or a killed writer's, which the next one repairs):
// it is signed at the events before that line and listed in TornTail.
func State(stateDir string, repo checkpoint.Repository, s envelope.Signer, now time.Time) (*StateRecorded, error) {
	ids, err := run.NewStore(stateDir).List()
	if err != nil {
		return nil, err
	}
	st := checkpoint.State{V: checkpoint.Version, Repository: repo, Runs: []checkpoint.StateRun{}, Time: now.UTC().Format(time.RFC3339Nano)}
	store := run.NewStore(stateDir)
	var torn []string
	for _, id := range ids {
		sum, err := run.VerifyLog(store.Path(id))
		if tornTail(err) && sum.Len > 0 {
			err = nil
			torn = append(torn, id)
		}
		if err == nil && sum.Len == 0 {
			err = errors.New("the log holds no event")
		}
		if err != nil {
			return nil, &checkpoint.StateError{Reason: checkpoint.ChainRefused, Run: id, Detail: err.Error(), Err: err}
		}
		st.Runs = append(st.Runs, checkpoint.StateRun{Run: id, Length: sum.Len, Head: sum.Head})
	}
	env, err := checkpoint.SignState(s, st)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(stateDir, filepath.FromSlash(StateDir), StateFileName(now))
	if err := writeAtomic(p, env); err != nil {
		return nil, err
	}
	return &StateRecorded{State: st, KeyID: s.KeyID(), Path: p, Envelope: env, TornTail: torn}, nil
}

// tornTail reports whether err is only an incomplete last line of the
// active file (a torn sealed segment is another reason, segment-torn).
func tornTail(err error) bool {
	var ce *eventlog.ChainError
	return errors.As(err, &ce) && ce.Reason == eventlog.TornTail
}

// StateReport is what VerifyState established.
type StateReport struct {
	checkpoint.VerifiedState
	// Uncovered are the runs the state directory holds that the
	// checkpoint does not list (planned after it).
	Uncovered []string
}

// VerifyState checks state checkpoint env (signed by a key of vs) against
// stateDir in repository repo: the same repository, every listed run
// present, its log verifying whole and holding the signed head at the
// signed length. Refusals are *checkpoint.Error (the envelope) or
// *checkpoint.StateError (the directory).
func VerifyState(stateDir string, env []byte, vs envelope.Verifiers, repo checkpoint.Repository) (*StateReport, error) {
	v, err := checkpoint.VerifyState(env, vs)
	if err != nil {
		return nil, err
	}
	store := run.NewStore(stateDir)
	look := func(id string, n int) (checkpoint.RunChain, bool) {
		if !run.ValidID(id) {
			return checkpoint.RunChain{}, false
		}
		if _, err := os.Stat(store.Path(id)); errors.Is(err, fs.ErrNotExist) {
			return checkpoint.RunChain{}, false
		}
		sum, at, err := run.VerifyLogAt(store.Path(id), n)
		return checkpoint.RunChain{Length: sum.Len, At: at.Hash, Time: at.Time, Err: err}, true
	}
	if err := checkpoint.MatchState(&v.State, repo, look); err != nil {
		return nil, err
	}
	ids, err := store.List()
	if err != nil {
		return nil, err
	}
	listed := make(map[string]bool, len(v.Runs))
	for _, r := range v.Runs {
		listed[r.Run] = true
	}
	rep := &StateReport{VerifiedState: *v, Uncovered: []string{}}
	for _, id := range ids {
		if !listed[id] {
			rep.Uncovered = append(rep.Uncovered, id)
		}
	}
	return rep, nil
}
