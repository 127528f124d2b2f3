package replay

import "fmt"

// transitions lists every legal state change. Anything else is refused.
var transitions = map[State][]State{
	"":               {Planned},
	Planned:          {Implementing, Verifying, Blocked, Stale, Cancelled},
	Implementing:     {Verifying, Blocked, Stale, Cancelled, Superseded},
	Verifying:        {AwaitingApproval, Blocked, Stale, Cancelled, Superseded},
	AwaitingApproval: {Complete, Rejected, Stale, Cancelled},
	Blocked:          {Superseded, Cancelled},
	Stale:            {Superseded, Cancelled},
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool { _, ok := transitions[s]; return !ok && s != "" }

// CanTransition reports whether from → to is legal.
func CanTransition(from, to State) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// TransitionError is an illegal state change.
type TransitionError struct{ From, To State }

func (e *TransitionError) Error() string {
	return fmt.Sprintf("illegal transition %s → %s", e.From, e.To)
}

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	switch s {
	case Planned, Implementing, Verifying, AwaitingApproval, Complete, Blocked, Rejected, Stale, Cancelled, Superseded:
		return true
	}
	return false
}
