package shardjob

import (
	"errors"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/kernel/exit"
)

func arts(names ...string) []*artifact.Artifact {
	out := make([]*artifact.Artifact, 0, len(names))
	for i, n := range names {
		a := &artifact.Artifact{ID: int64(i + 1), Name: n}
		a.Run.ID = 77
		out = append(out, a)
	}
	return out
}

// The merge takes exactly its attempt's shards, all of 1..N once, with
// one N; it refuses (typed) a missing, doubly listed, expired shard and
// disagreeing counts, and never mixes in another attempt's shards.
func TestSelectShards(t *testing.T) {
	w := WorkflowRun{ID: 77, Attempt: 2}
	sel, err := selectShards(arts("proofgate-plan-77-2", "proofgate-shard-77-2-2-of-3", "proofgate-shard-77-1-1-of-3", "proofgate-shard-77-2-3-of-3",
		"proofgate-shard-77-2-1-of-3", "proofgate-77", "proofgate-run-abc"), w)
	if err != nil || len(sel) != 3 {
		t.Fatalf("%v %v", sel, err)
	}
	for i, s := range sel {
		if s.spec.Index != i+1 || s.art.Name != ShardArtifactName(77, 2, s.spec) {
			t.Fatalf("selection %d: %+v", i, s)
		}
	}
	expired := arts("proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-2-of-2")
	expired[1].Expired = true
	for _, c := range []struct {
		list []*artifact.Artifact
		want Reason
		text string
	}{
		{arts("proofgate-shard-77-2-1-of-3", "proofgate-shard-77-2-3-of-3"), Missing, "1 of 3 shards were not uploaded (proofgate-shard-77-2-2-of-3)"},
		{arts("proofgate-shard-77-1-1-of-2", "proofgate-shard-77-1-2-of-2"), Missing, "has no shard artifacts"},
		{arts(), Missing, "has no shard artifacts"},
		{arts("proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-2-of-2"), Duplicate, "listed twice"},
		{arts("proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-2-of-3"), Count, "beside shards of 2"},
		{expired, Expired, "expired"},
	} {
		_, err := selectShards(c.list, w)
		var se *Error
		if !errors.As(err, &se) || se.Reason != c.want || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%d artifacts: %v, want %s %q", len(c.list), err, c.want, c.text)
		}
		if Class(err) != exit.Refused {
			t.Errorf("%v: class %v", err, Class(err))
		}
	}
}
