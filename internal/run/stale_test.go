package run

import (
	"context"
	"fmt"
	"github.com/proofgate/proofgate/kernel/replay"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A check that writes into the work tree makes its run STALE; the run, and
// status of it later, say why and name the paths the check wrote.
func TestStaleSaysWhyAndWhere(t *testing.T) {
	f := newFixture(t, `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: cov, run: [sh, -c, 'mkdir -p .nyc_output && echo {} > .nyc_output/out.json']}
`)
	r := f.plan(t)
	f.exec(t, r)
	si := r.Stale()
	r.Close()
	if si == nil {
		t.Fatalf("state %s, no stale info", r.State())
	}
	if si.From != replay.Verifying || !slices.Equal(si.Paths, []string{".nyc_output/out.json"}) || si.PathsCapped {
		t.Fatalf("stale info %+v, want from VERIFYING, paths [.nyc_output/out.json]", si)
	}
	if si.Reason != "changed while verifying: the work tree changed (.nyc_output/out.json)" {
		t.Fatalf("reason %q", si.Reason)
	}
	// status, any time later, reads the same from the log
	st, err := Inspect(context.Background(), f.state, r.ID, f.fresh())
	if err != nil {
		t.Fatal(err)
	}
	if st.Stale == nil || !slices.Equal(st.Stale.Paths, si.Paths) || st.Stale.Reason != si.Reason {
		t.Fatalf("status stale %+v, want %+v", st.Stale, si)
	}
}

// An edit after planning found by status: the reason and the paths, capped
// at what internal/source records, with the cap said.
func TestStaleFoundByStatusIsCapped(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.plan(t)
	f.exec(t, r)
	r.Close()
	for i := range 25 {
		os.WriteFile(filepath.Join(f.repo, fmt.Sprintf("gen%02d.txt", i)), []byte("x"), 0o644)
	}
	st, err := Inspect(context.Background(), f.state, r.ID, f.fresh())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != replay.Stale || st.Stale == nil {
		t.Fatalf("state %s, stale %+v", st.State, st.Stale)
	}
	if len(st.Stale.Paths) != maxChanges || !st.Stale.PathsCapped || st.Stale.From != replay.AwaitingApproval {
		t.Fatalf("stale %+v, want %d paths, capped, from AWAITING_APPROVAL", st.Stale, maxChanges)
	}
	if st.Stale.Paths[0] != "gen00.txt" {
		t.Fatalf("first path %q", st.Stale.Paths[0])
	}
}

// A run that is not STALE has no stale info.
func TestNotStaleNoInfo(t *testing.T) {
	f := newFixture(t, twoChecks)
	r := f.plan(t)
	defer r.Close()
	f.exec(t, r)
	if si := r.Stale(); si != nil {
		t.Fatalf("stale info %+v on a %s run", si, r.State())
	}
}
