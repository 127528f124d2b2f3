package shard

import (
	"slices"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// withPicks makes the executors of the test run pick instead of their
// assignment (a hostile shard signed by a trusted key).
func withPicks(t *testing.T, pick func(assigned [][]string, s Spec) []string) {
	t.Helper()
	pickChecks = pick
	t.Cleanup(func() { pickChecks = nil })
}

func without(ids []string, x string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == x })
}

// Every check executed exactly once, every shard present: only the planned
// assignment tells that x00 was shard 3's, not shard 2's.
func TestMergeRefusesACheckMovedToAnotherShard(t *testing.T) {
	f := newFixture(t, contractYAML(4, ""))
	a, _ := Assign(f.c.Checks, 3)
	if !slices.Contains(a[2], "x00") {
		t.Fatalf("fixture: x00 is not shard 3's: %v", a)
	}
	withPicks(t, func(assigned [][]string, s Spec) []string {
		switch s.Index {
		case 2:
			return append(slices.Clone(assigned[1]), "x00")
		case 3:
			return without(assigned[2], "x00")
		}
		return assigned[s.Index-1]
	})
	_, err := f.merge(f.execAll(t, 3), unsigned)
	me := wantReason(t, err, Unassigned)
	if !strings.Contains(me.Detail, `"x00"`) || !strings.Contains(me.Detail, "shard 3") {
		t.Fatalf("detail %q", me.Detail)
	}
}

// One shard of a split runs every check, the other none: each check once,
// both indexes present, and still not the plan.
func TestMergeRefusesAShardThatTookEveryCheck(t *testing.T) {
	f := newFixture(t, contractYAML(2, ""))
	withPicks(t, func(assigned [][]string, s Spec) []string {
		if s.Index == 1 {
			return slices.Concat(assigned...)
		}
		return []string{}
	})
	_, err := f.merge(f.execAll(t, 2), unsigned)
	wantReason(t, err, Unassigned)
}

// The other hostile splits keep their own reasons: a check dropped by its
// shard (in no shard), a check in two shards, and an index outside 1..N.
func TestMergeRefusesOtherSplitsThanPlanned(t *testing.T) {
	f := newFixture(t, contractYAML(4, ""))
	withPicks(t, func(assigned [][]string, s Spec) []string {
		if s.Index == 3 {
			return without(assigned[2], "x00")
		}
		return assigned[s.Index-1]
	})
	me := wantReason(t, firstErr(f.merge(f.execAll(t, 3), unsigned)), Missing)
	if !strings.Contains(me.Detail, `"x00"`) {
		t.Fatalf("detail %q", me.Detail)
	}
	withPicks(t, func(assigned [][]string, s Spec) []string {
		if s.Index == 2 {
			return append(slices.Clone(assigned[1]), "x00")
		}
		return assigned[s.Index-1]
	})
	wantReason(t, firstErr(f.merge(f.execAll(t, 3), unsigned)), Overlap)
	pickChecks = nil
	dirs := f.execAll(t, 2)
	rewrite(t, dirs[1], func(m *replay.ShardManifest, _ []eventlog.Event) []eventlog.Event { m.Shard = 3; return nil })
	wantReason(t, firstErr(f.merge(dirs, unsigned)), Tampered)
}

func firstErr[T any](_ T, err error) error { return err }
