package retention_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
)

func planOf(runs []retention.RunPlan, id string) retention.RunPlan {
	for _, rp := range runs {
		if rp.Run == id {
			return rp
		}
	}
	return retention.RunPlan{}
}

// A run a live writer holds a lease on (evidence collect) is kept, in the
// dry run and the apply, with the writer and the reason; released, it is
// archived. A lease on an archived run is refused.
func TestLeasedRunKept(t *testing.T) {
	f := newFixture(t)
	id, other := f.complete(), f.complete()
	l, err := run.Lease(f.state, id, "evidence collect", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, err := retention.Scan(f.state, settings(t), later())
	if err != nil {
		t.Fatal(err)
	}
	rp := planOf(p.Runs, id)
	if rp.Decision != retention.Keep || rp.Writer == nil || rp.Writer.Purpose != "evidence collect" || !strings.Contains(rp.Reason, "a live writer holds a lease on it (evidence collect, pid") {
		t.Fatalf("dry run of a leased run: %+v", rp)
	}
	res := f.apply(later)
	if len(res.Archived) != 1 || res.Archived[0].Run != other || retention.IsArchived(f.dir(id)) {
		t.Fatalf("apply beside a lease archived %+v", res.Archived)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if res := f.apply(later); len(res.Archived) != 1 || res.Archived[0].Run != id {
		t.Fatalf("apply after the lease was released archived %+v", res.Archived)
	}
	var ae *run.ArchivedError
	if _, err := run.Lease(f.state, id, "evidence collect", time.Second); !errors.As(err, &ae) {
		t.Fatalf("a lease on an archived run: %v", err)
	}
}

// leasingSigner takes a lease on a run while the apply signs its
// checkpoint: after the scan planned the run's archive, before the run is
// archived.
type leasingSigner struct {
	state, id string
	lease     *lock.Lease
	t         *testing.T
}

func (s *leasingSigner) SignCheckpoint(payload []byte) ([]byte, error) {
	l, err := run.Lease(s.state, s.id, "evidence collect", time.Second)
	if err != nil {
		s.t.Error(err)
	}
	s.lease = l
	return []byte(`{"payloadType":"x","payload":"","signatures":[]}`), nil
}

// Hostile: a lease taken after the scan planned the run's archive. The
// run is skipped (reported with its writer and the reason), not archived;
// its blobs are not reclaimed.
func TestLeaseTakenDuringApply(t *testing.T) {
	f := newFixture(t)
	id := f.complete()
	unnamed := f.blob(id, "unnamed, in a run leased mid-apply", 2*time.Hour)
	s := &leasingSigner{state: f.state, id: id, t: t}
	res, err := retention.Apply(context.Background(), f.state, retention.Options{Settings: settings(t), Actor: "tester", Now: later, UnsafeShortSettle: true, Signer: s})
	if err != nil {
		t.Fatal(err)
	}
	defer s.lease.Release()
	if len(res.Archived) != 0 || retention.IsArchived(f.dir(id)) {
		t.Fatalf("archived a run leased mid-apply: %+v", res.Archived)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Run != id || res.Skipped[0].Writer == nil || !strings.Contains(res.Skipped[0].Reason, "lease") {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	if res.Counts.BlobsReclaimed != 0 || !exists(unnamed) {
		t.Fatalf("reclaimed %d blobs of a leased run", res.Counts.BlobsReclaimed)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
