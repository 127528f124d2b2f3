package replay

import (
	"maps"
	"slices"
)

// The admission index. A session's recorder admits each call from the
// replay: is the session open, is an action unresolved, does the call
// repeat an earlier action (same tool and input hash: a pending approval
// polled, an approved call started, a retry). The fold keeps, per session,
// the latest action of each (tool, input hash), the started unfinished
// actions and the crashed undecided ones, updated as each event applies,
// so admission reads maps and never walks the session's actions: a call
// costs the same after 10 or 10 000 calls (BenchmarkAdmission in
// internal/session).

// SessionHead is a session without its actions.
type SessionHead struct {
	ID      string
	Agent   string
	Open    bool
	Owner   Owner
	Turns   int
	Actions int // how many actions it requested
}

// Head is session id without its actions.
func (f *Folder) Head(id string) (SessionHead, bool) {
	if f.s == nil || f.s.sessions[id] == nil {
		return SessionHead{}, false
	}
	s := f.s.sessions[id]
	return SessionHead{ID: s.id, Agent: s.agent, Open: s.open, Owner: s.owner, Turns: s.nturns, Actions: len(s.actions)}, true
}

// OpenHead is the open session without its actions (OpenSession copies
// every action).
func (f *Folder) OpenHead() (SessionHead, bool) {
	if !f.SessionOpen() {
		return SessionHead{}, false
	}
	return f.Head(f.s.open)
}

// Latest is the latest action session id requested with tool and input
// hash, if any.
func (f *Folder) Latest(id, tool, inputHash string) (CallView, bool) {
	if f.s == nil || f.s.sessions[id] == nil {
		return CallView{}, false
	}
	a, ok := f.s.sessions[id].latest[latestKey(tool, inputHash)]
	if !ok {
		return CallView{}, false
	}
	return f.s.actions[a].v, true
}

func latestKey(tool, inputHash string) string { return tool + "\x00" + inputHash }

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}
