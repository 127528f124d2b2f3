package approval

// Tally collects a run's decisions in the order they were recorded. The
// zero value is an empty tally. Adding is near constant time (people are
// a union-find over the identity keys), so replaying a log of millions of
// decisions stays linear.
type Tally struct {
	group    map[string]int // an identity key → a group that holds it
	parent   []int          // union-find: a group's parent; a root is one person
	last     []Decision     // a root's latest decision
	added    []added        // every decision, for Approvers
	approved map[string]bool
	counted  int
	rejected bool
}

type added struct {
	id    Identity
	group int
}

// Person is one person the tally found: every identity their decisions
// showed, in the order recorded.
type Person struct {
	Identities []Identity
}

// Add records decision d spoken by id, after every decision added before.
func (t *Tally) Add(id Identity, d Decision) {
	keys := id.keys()
	switch d {
	case Approved:
		if !t.Approved(id) {
			t.counted++
		}
		if t.approved == nil {
			t.approved = map[string]bool{}
		}
		for _, k := range keys {
			t.approved[k] = true
		}
	case Rejected:
		t.rejected = true
	}
	p := t.person(keys)
	t.last[p] = d
	t.added = append(t.added, added{id, p})
}

// person returns the person any of keys names, merging every other person
// they name into the one seen first, or a new person; it then holds all
// of keys.
func (t *Tally) person(keys []string) int {
	if t.group == nil {
		t.group = map[string]int{}
	}
	p := -1
	for _, k := range keys {
		g, ok := t.group[k]
		if !ok {
			continue
		}
		switch g = t.find(g); {
		case p == -1:
			p = g
		case g < p: // the decision links two people: merge them
			t.parent[p], p = g, g
		case g > p:
			t.parent[g] = p
		}
	}
	if p == -1 {
		p = len(t.parent)
		t.parent = append(t.parent, p)
		t.last = append(t.last, "")
	}
	for _, k := range keys {
		if _, ok := t.group[k]; !ok {
			t.group[k] = p
		}
	}
	return p
}

// find returns the root of group g, halving the path on the way.
func (t *Tally) find(g int) int {
	for t.parent[g] != g {
		t.parent[g] = t.parent[t.parent[g]]
		g = t.parent[g]
	}
	return g
}

// Approved reports whether an approval added earlier spoke for any of
// id's identities: approving again would repeat it.
func (t *Tally) Approved(id Identity) bool {
	for _, k := range id.keys() {
		if t.approved[k] {
			return true
		}
	}
	return false
}

// Counted is the number of approvals that, when added, spoke for no
// identity an earlier approval spoke for: the count the run lifecycle
// completes a run on. A later decision linking two earlier approvers does
// not lower it (the kernel refuses to record an approval that Approved
// reports; a replayed one is accepted without counting). For a run whose
// approvals were recorded that way it equals len(Approvers()).
func (t *Tally) Counted() int { return t.counted }

// Rejected reports whether any rejection was added: in the run lifecycle
// a rejection is final.
func (t *Tally) Rejected() bool { return t.rejected }

// Approvers are the people, identities merged across all decisions, whose
// latest decision approves, in the order each was first seen: the count a
// verifier reports.
func (t *Tally) Approvers() []Person {
	at := map[int]int{} // root → index in out
	var out []Person
	for g, p := range t.parent {
		if p == g && t.last[g] == Approved {
			at[g] = len(out)
			out = append(out, Person{})
		}
	}
	for _, a := range t.added {
		if i, ok := at[t.find(a.group)]; ok {
			out[i].Identities = append(out[i].Identities, a.id)
		}
	}
	return out
}
