package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/kernel/exit"
)

func noEnv(string) string { return "" }

// A cancelled run older than archive_after is planned, then archived by an
// apply that records a signed checkpoint; a shorter setting, a bad actor
// and a contract that does not load are usage errors.
func TestPrune(t *testing.T) {
	state, r := executed(t)
	if err := r.Cancel("alice", "done"); err != nil {
		t.Fatal(err)
	}
	r.Close()
	s, err := RetentionSettings(filepath.Join(t.TempDir(), "none.yaml"), RetentionFlags{}, noEnv)
	if err != nil || s.ArchiveAfter.Source != retention.FromDefault {
		t.Fatalf("settings %+v, %v", s, err)
	}
	later := time.Now().Add(40 * 24 * time.Hour)
	plan, err := PruneScan(state, s, later)
	if err != nil || len(plan.Archive) != 1 || plan.Archive[0] != r.ID {
		t.Fatalf("scan %+v, %v", plan, err)
	}
	o := PruneOptions{Settings: s, Actor: "alice", Signer: keytest.New(t).Signer, Now: func() time.Time { return later }, TestSettle: time.Millisecond}
	res, err := PruneApply(context.Background(), state, o)
	if err != nil || res.Counts.RunsArchived != 1 || !retention.IsArchived(r.Dir) {
		t.Fatalf("apply %+v, %v", res, err)
	}
	if _, err := RetentionSettings("", RetentionFlags{ArchiveAfter: "2d"}, noEnv); class(err) != exit.Usage {
		t.Fatalf("a shorter --archive-after: %v (class %v)", err, class(err))
	}
	if _, err := PruneActor("a\nb"); class(err) != exit.Usage {
		t.Fatalf("a two-line actor: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "contract.yaml")
	os.WriteFile(bad, []byte("version: 9\n"), 0o644)
	if _, err := RetentionSettings(bad, RetentionFlags{}, noEnv); class(err) != exit.Usage || errors.Is(err, exit.Refused) {
		t.Fatalf("a contract that does not load: %v", err)
	}
}
