package approval

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

type rec struct {
	id Identity
	d  Decision
}

func tally(rs ...rec) *Tally {
	var t Tally
	for _, r := range rs {
		t.Add(r.id, r.d)
	}
	return &t
}

func approve(id Identity) rec { return rec{id, Approved} }
func reject(id Identity) rec  { return rec{id, Rejected} }

// TestGrouping: the identities that make one person, and those that do not.
func TestGrouping(t *testing.T) {
	for _, c := range []struct {
		name      string
		recs      []rec
		approvers int // len(Approvers())
		counted   int
	}{
		{"one actor", []rec{approve(Local("alice"))}, 1, 1},
		{"two actors", []rec{approve(Local("alice")), approve(Local("bob"))}, 2, 2},
		{"actor case and spaces", []rec{approve(Local("alice")), approve(Local("Alice")), approve(Local(" ALICE "))}, 1, 1},
		// issue 25 class 7: one actor.Key for every comparison.
		{"actor lookalikes, invisible and space-like variants", []rec{approve(Local("alice")), approve(Local("\u0430lice")), approve(Local("ali\u200bce")),
			approve(Local("alice\u00a0")), approve(Local("ＡＬＩＣＥ"))}, 1, 1},
		{"a lookalike's rejection withdraws", []rec{approve(Local("alice")), reject(Local("\u0430lice"))}, 0, 1},
		{"actor and the same GitHub login", []rec{approve(Local("alice")), approve(GitHub("alice-gh", "ALICE", 42))}, 1, 1},
		{"renamed GitHub account, same id", []rec{approve(GitHub("alice", "alice", 7)), approve(GitHub("alice-renamed", "alice-renamed", 7))}, 1, 1},
		{"two GitHub accounts", []rec{approve(GitHub("alice", "alice", 7)), approve(GitHub("bob", "bob", 8))}, 2, 2},
		{"an actor named like an id is not that id", []rec{approve(Local("7")), approve(GitHub("alice", "alice", 7))}, 2, 2},
		{"bots do not exist at this level", []rec{approve(GitHub("dependabot[bot]", "dependabot[bot]", 49699333)), approve(Local("alice"))}, 2, 2},
		{"repeated approval", []rec{approve(Local("alice")), approve(Local("alice"))}, 1, 1},
		{
			// alice and bob approved; one decision shows alice's actor and
			// bob's login: they are one person to a verifier, while the
			// lifecycle's count, made as each was recorded, stays.
			"one decision merges two people",
			[]rec{approve(Local("alice")), approve(Local("bob")), approve(GitHub("alice", "bob", 9))}, 1, 2,
		},
		{"a rejection withdraws the same person's approval", []rec{approve(Local("alice")), approve(Local("bob")), reject(Local("ALICE"))}, 1, 2},
		{"a rejection by login withdraws", []rec{approve(GitHub("alice", "alice", 7)), reject(GitHub("al", "al", 7))}, 0, 1},
		{"a later approval stands again", []rec{approve(Local("alice")), reject(Local("alice")), approve(Local("alice"))}, 1, 1},
		{"another's rejection withdraws nothing", []rec{approve(Local("alice")), reject(Local("bob"))}, 1, 1},
		{"a merging rejection withdraws both", []rec{approve(Local("alice")), approve(Local("bob")), reject(GitHub("alice", "bob", 9))}, 0, 2},
		{"an unknown decision approves nothing", []rec{{Local("alice"), "maybe"}}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl := tally(c.recs...)
			if got := len(tl.Approvers()); got != c.approvers {
				t.Errorf("Approvers: %d, want %d", got, c.approvers)
			}
			if got := tl.Counted(); got != c.counted {
				t.Errorf("Counted: %d, want %d", got, c.counted)
			}
		})
	}
}

// TestApproved: only an approval makes a repeat; a rejection does not.
func TestApproved(t *testing.T) {
	tl := tally(approve(GitHub("alice", "alice", 7)), reject(Local("bob")))
	for id, want := range map[string]bool{"alice": true, "ALICE ": true, "bob": false, "carol": false} {
		if got := tl.Approved(Local(id)); got != want {
			t.Errorf("Approved(%q) = %v, want %v", id, got, want)
		}
	}
	if !tl.Approved(GitHub("renamed", "renamed", 7)) {
		t.Error("the same GitHub id under a new login is not a repeat")
	}
	if !tl.Rejected() {
		t.Error("Rejected() is false after a rejection")
	}
	if (&Tally{}).Approved(Local("")) || (&Tally{}).Rejected() || len((&Tally{}).Approvers()) != 0 {
		t.Error("the zero Tally is not empty")
	}
}

// TestApproversIdentities: a merged person carries every identity shown.
func TestApproversIdentities(t *testing.T) {
	a, b, link, c := Local("alice"), Local("bob"), GitHub("alice", "bob", 9), Local("carol")
	ps := tally(approve(a), approve(c), approve(b), approve(link)).Approvers()
	if len(ps) != 2 {
		t.Fatalf("%d people, want 2: %+v", len(ps), ps)
	}
	if got := fmt.Sprint(ps[0].Identities); got != fmt.Sprint([]Identity{a, b, link}) {
		t.Errorf("first person: %s", got)
	}
	if got := fmt.Sprint(ps[1].Identities); got != fmt.Sprint([]Identity{c}) {
		t.Errorf("second person: %s", got)
	}
}

type unmet string

func (u unmet) Unmet(approvers []Person) string {
	for _, p := range approvers {
		for _, id := range p.Identities {
			if id.Actor == string(u) {
				return ""
			}
		}
	}
	return string(u) + " did not approve"
}

func TestVerdict(t *testing.T) {
	two := Requirement{Required: 2}
	for _, c := range []struct {
		name    string
		req     Requirement
		recs    []rec
		want    Decision
		missing int
	}{
		{"none", two, nil, "", 2},
		{"one of two", two, []rec{approve(Local("alice"))}, "", 1},
		{"two of two", two, []rec{approve(Local("alice")), approve(Local("bob"))}, Approved, 0},
		{"three of two", two, []rec{approve(Local("alice")), approve(Local("bob")), approve(Local("carol"))}, Approved, 0},
		{"repeat does not count", two, []rec{approve(Local("alice")), approve(Local("Alice"))}, "", 1},
		{"rejection wins", two, []rec{approve(Local("alice")), approve(Local("bob")), reject(Local("carol"))}, Rejected, 0},
		{"zero required", Requirement{}, nil, Approved, 0},
		{"rule met", Requirement{Required: 1, Rules: []Rule{unmet("bob")}}, []rec{approve(Local("bob"))}, Approved, 0},
		{"rule unmet", Requirement{Required: 1, Rules: []Rule{unmet("bob")}}, []rec{approve(Local("alice"))}, "", 0},
		{"rule unmet after withdrawal", Requirement{Required: 1, Rules: []Rule{unmet("bob")}},
			[]rec{approve(Local("alice")), approve(Local("bob")), reject(Local("bob"))}, Rejected, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := c.req.Of(tally(c.recs...))
			if v.Decision != c.want || v.Missing() != c.missing || v.Required != c.req.Required {
				t.Errorf("%+v (missing %d), want %q missing %d", v, v.Missing(), c.want, c.missing)
			}
		})
	}
	if v := two.Of(tally(approve(Local("alice")))); v.Unmet != nil {
		t.Errorf("no rules, yet unmet: %v", v.Unmet)
	}
	if v := (Requirement{Required: 1, Rules: []Rule{unmet("bob")}}).Of(tally(approve(Local("alice")))); len(v.Unmet) != 1 || v.Unmet[0] != "bob did not approve" {
		t.Errorf("unmet: %v", v.Unmet)
	}
	if v := two.Verdict(2, false); v.Decision != Approved || v.Approvals != 2 {
		t.Errorf("Verdict(2, false): %+v", v)
	}
	if v := two.Verdict(5, true); v.Decision != Rejected {
		t.Errorf("Verdict(5, true): %+v", v)
	}
}

func TestDecision(t *testing.T) {
	if Approved != "approved" || Rejected != "rejected" {
		t.Fatal("the wire spellings changed")
	}
	for d, want := range map[Decision]bool{Approved: true, Rejected: true, "": false, "Approved": false, "maybe": false} {
		if d.Valid() != want {
			t.Errorf("%q.Valid() = %v", d, !want)
		}
	}
}

func TestAccountSame(t *testing.T) {
	gh := func(login string, id string) Account {
		return Account{Provider: ProviderGitHub, Subject: id, Login: login}
	}
	for _, c := range []struct {
		a, b Account
		want bool
	}{
		{gh("alice", "1"), gh("alice", "1"), true},
		{gh("alice", "1"), gh("ALICE-new", "1"), true}, // renamed: the id decides
		{gh("alice", "1"), gh("alice", "2"), false},    // a login taken over by another account
		{gh("alice", ""), gh("Alice", "2"), true},      // one id unknown: the login decides
		{gh("", ""), gh("", ""), false},                // nothing known
		{gh("alice", "1"), Account{Provider: "gitlab", Subject: "1", Login: "alice"}, false},
	} {
		if got := c.a.Same(c.b); got != c.want {
			t.Errorf("%+v.Same(%+v) = %v", c.a, c.b, got)
		}
	}
}

// TestSameAsBefore compares the tally with the two algorithms it replaced
// (kept here verbatim): the replay's first-sight count over approver keys
// (internal/run approverKeys/approvedBy) and the verifier's merged count
// (bundle countApprovals), on random decision sequences over a small
// alphabet of actors, logins and ids so that repeats, renames and merges
// are frequent.
func TestSameAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"alice", "Alice", " bob", "BOB ", "carol", "", "7"}
	for range 20000 {
		var recs []oldDecision
		for range rng.IntN(8) {
			d := oldDecision{Decision: "approved", Actor: names[rng.IntN(len(names))]}
			if rng.IntN(3) == 0 {
				d.Decision = "rejected"
			}
			if rng.IntN(2) == 0 {
				d.GitHub = &oldReview{Login: names[rng.IntN(len(names))], UserID: int64(rng.IntN(4))}
			}
			recs = append(recs, d)
		}
		var tl Tally
		approved, approvers, rejected := map[string]bool{}, 0, false
		for i, d := range recs {
			id := Local(d.Actor)
			if d.GitHub != nil {
				id = GitHub(d.Actor, d.GitHub.Login, d.GitHub.UserID)
			}
			oldApprovedBy := func() bool {
				for _, k := range oldApproverKeys(d.Actor, d.GitHub) {
					if approved[k] {
						return true
					}
				}
				return false
			}()
			if got := tl.Approved(id); got != oldApprovedBy {
				t.Fatalf("%+v, decision %d: Approved %v, approvedBy %v", recs, i, got, oldApprovedBy)
			}
			tl.Add(id, Decision(d.Decision))
			if d.Decision == "approved" {
				if !oldApprovedBy {
					approvers++
				}
				for _, k := range oldApproverKeys(d.Actor, d.GitHub) {
					approved[k] = true
				}
			} else {
				rejected = true
			}
			if tl.Counted() != approvers || tl.Rejected() != rejected {
				t.Fatalf("%+v, decision %d: Counted %d Rejected %v, the replay had %d %v", recs, i, tl.Counted(), tl.Rejected(), approvers, rejected)
			}
			if got, want := len(tl.Approvers()), oldCountApprovals(recs[:i+1]); got != want {
				t.Fatalf("%+v, decision %d: %d approvers, countApprovals said %d", recs, i, got, want)
			}
		}
	}
}

type oldReview struct {
	Login  string
	UserID int64
}

type oldDecision struct {
	Decision string
	Actor    string
	GitHub   *oldReview
}

func oldApproverKeys(actor string, gh *oldReview) []string {
	keys := []string{"actor:" + strings.ToLower(strings.TrimSpace(actor))}
	if gh != nil {
		keys = append(keys, "github-id:"+strconv.FormatInt(gh.UserID, 10), "actor:"+strings.ToLower(strings.TrimSpace(gh.Login)))
	}
	return keys
}

func oldCountApprovals(ds []oldDecision) int {
	type person struct {
		keys map[string]bool
		last string
	}
	var people []*person
	for _, d := range ds {
		keys := oldApproverKeys(d.Actor, d.GitHub)
		var p *person
		for _, q := range people {
			for _, k := range keys {
				if q.keys[k] {
					if p == nil {
						p = q
					} else if p != q {
						for k := range q.keys {
							p.keys[k] = true
						}
						q.keys = map[string]bool{}
					}
					break
				}
			}
		}
		if p == nil {
			p = &person{keys: map[string]bool{}}
			people = append(people, p)
		}
		for _, k := range keys {
			p.keys[k] = true
		}
		p.last = d.Decision
	}
	n := 0
	for _, p := range people {
		if len(p.keys) > 0 && p.last == "approved" {
			n++
		}
	}
	return n
}

// TestLinear: a replay of very many decisions stays fast (the replay adds
// every approval.recorded of a log of up to eventlog.MaxEvents lines).
func TestLinear(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	var tl Tally
	for i := range n {
		tl.Add(GitHub("u"+strconv.Itoa(i), "u"+strconv.Itoa(i), int64(i)), Approved)
		// every second decision links its person to the first one
		if i%2 == 1 {
			tl.Add(GitHub("u0", "u"+strconv.Itoa(i), int64(i)), Approved)
		}
	}
	if got := len(tl.Approvers()); got != n/2 {
		t.Fatalf("%d approvers, want %d", got, n/2)
	}
	if tl.Counted() != n {
		t.Fatalf("counted %d, want %d", tl.Counted(), n)
	}
}

func BenchmarkTallyAdd(b *testing.B) {
	for b.Loop() {
		var tl Tally
		for i := range 1000 {
			tl.Add(GitHub("u"+strconv.Itoa(i), "u"+strconv.Itoa(i), int64(i)), Approved)
		}
	}
}
