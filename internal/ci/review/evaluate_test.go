package review

import (
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/contract"
)

const h = "1111111111111111111111111111111111111111"

func in(reviews ...Review) Input {
	return Input{
		Head:        h,
		Author:      User{Login: "alice", ID: 1},
		CommitUsers: []User{{Login: "alice", ID: 1}},
		Reviews:     reviews,
		Permissions: map[int64]Permission{2: {Permission: "write"}, 3: {Permission: "admin"}, 4: {Permission: "read"}},
		Rule:        contract.Approval{Required: 1, Roles: []string{"write", "maintain", "admin"}},
	}
}

func rv(id, user int64, state, commit string) Review {
	return Review{ID: id, User: User{Login: "u", ID: user}, State: state, CommitID: commit,
		SubmittedAt: time.Unix(id, 0)}
}

func TestEvaluatePure(t *testing.T) {
	// Out-of-order input is sorted chronologically: the later CHANGES_REQUESTED wins.
	d := Evaluate(in(rv(20, 2, StateChangesRequested, h), rv(10, 2, StateApproved, h)))
	if d.Satisfied || len(d.Blocking) != 1 {
		t.Fatalf("order: %+v", d)
	}
	// Unknown permission: an approval does not count, a change request blocks.
	x := in(rv(1, 9, StateApproved, h))
	if d := Evaluate(x); d.Satisfied || d.Ignored[0].Reason != ReasonNoPermission {
		t.Fatalf("unknown permission approval: %+v", d)
	}
	x = in(rv(1, 3, StateApproved, h), rv(2, 9, StateChangesRequested, h))
	if d := Evaluate(x); d.Satisfied || len(d.Blocking) != 1 || d.Blocking[0].Permission != "unknown" {
		t.Fatalf("unknown permission change request must block: %+v", d)
	}
	// A read-only user's change request does not block.
	x = in(rv(1, 3, StateApproved, h), rv(2, 4, StateChangesRequested, h))
	if d := Evaluate(x); !d.Satisfied {
		t.Fatalf("read-only change request blocked: %+v", d)
	}
	// Empty head never satisfies, even with required 0.
	x = in()
	x.Head, x.Rule.Required = "", 0
	if Evaluate(x).Satisfied {
		t.Fatal("empty head satisfied")
	}
	// Lower-case state (payload spelling) is normalised, and unknown states ignored.
	if d := Evaluate(in(rv(1, 2, "approved", h))); !d.Satisfied {
		t.Fatalf("lower-case approved: %+v", d)
	}
	if d := Evaluate(in(rv(1, 2, "LGTM", h))); d.Satisfied || d.Ignored[0].Reason != ReasonUnknownState {
		t.Fatalf("unknown state: %+v", d)
	}
	// Zero user id (deleted account) never counts.
	if d := Evaluate(in(rv(1, 0, StateApproved, h))); d.Satisfied {
		t.Fatal("ghost user counted")
	}
	// Renamed PR author, matched by id.
	x = in(Review{ID: 1, User: User{Login: "alice-new", ID: 1}, State: StateApproved, CommitID: h})
	x.Permissions[1] = Permission{Permission: "admin"}
	if Evaluate(x).Satisfied {
		t.Fatal("renamed author counted")
	}
}

func TestRole(t *testing.T) {
	for _, c := range []struct{ p, r, want string }{
		{"admin", "admin", "admin"}, {"write", "maintain", "maintain"}, {"read", "triage", "triage"},
		{"write", "custom-reviewer", "write"}, {"none", "", "none"}, {"", "", "none"}, {"bogus", "", "none"},
	} {
		if got := (Permission{c.p, c.r}).Role(); got != c.want {
			t.Errorf("Role(%q,%q) = %q, want %q", c.p, c.r, got, c.want)
		}
	}
}

// FuzzEvaluate checks the safety invariant: Satisfied implies Required
// distinct, non-author, non-bot, in-role reviewers whose latest decisive
// review is an approval of exactly the head, and no blocker.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{0, 2, 0, 1, 3, 1}, uint8(1), false)
	f.Add([]byte{0, 1, 0, 0, 2, 2, 0, 3, 0}, uint8(2), true)
	f.Fuzz(func(t *testing.T, ops []byte, req uint8, allow bool) {
		if len(ops) > 300 {
			return
		}
		states := []string{StateApproved, StateChangesRequested, StateCommented, StateDismissed, StatePending}
		commits := []string{h, "old", ""}
		x := in()
		x.Rule.Required = int(req % 4)
		x.Rule.AllowCommitAuthors = allow
		x.Permissions[5] = Permission{Permission: "write", RoleName: "maintain"}
		x.CommitUsers = append(x.CommitUsers, User{Login: "c", ID: 5})
		for i := 0; i+2 < len(ops); i += 3 {
			u := int64(ops[i] % 7)
			r := Review{ID: int64(i + 1), User: User{Login: "u", ID: u}, State: states[int(ops[i+1])%len(states)],
				CommitID: commits[int(ops[i+2])%len(commits)], SubmittedAt: time.Unix(int64(ops[i+2]%4), 0)}
			if u == 6 {
				r.User.Type = "Bot"
				x.Permissions[6] = Permission{Permission: "admin"}
			}
			x.Reviews = append(x.Reviews, r)
		}
		d := Evaluate(x)
		if !d.Satisfied {
			return
		}
		if len(d.Blocking) != 0 || len(d.Counted) < x.Rule.Required {
			t.Fatalf("satisfied with blockers or too few: %+v", d)
		}
		seen := map[int64]bool{}
		for _, a := range d.Counted {
			if seen[a.UserID] || a.Commit != h || a.UserID == 1 || a.UserID == 6 || a.UserID == 4 || a.UserID == 0 {
				t.Fatalf("bad counted approval %+v in %+v", a, d)
			}
			if a.UserID == 5 && !allow {
				t.Fatalf("commit author counted: %+v", d)
			}
			seen[a.UserID] = true
		}
	})
}
