package event_test

import (
	"context"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/event"
)

func TestCommitTreeFromGit(t *testing.T) {
	dir, baseSHA := repoWithPR(t)
	want := run(t, dir, "rev-parse", baseSHA+"^{tree}")
	if got := event.CommitTree(context.Background(), dir, nil, owner, repo, baseSHA); got != want {
		t.Fatalf("tree %q, want %q", got, want)
	}
	// Not in the checkout and no API: unknown.
	if got := event.CommitTree(context.Background(), dir, nil, owner, repo, head); got != "" {
		t.Fatalf("tree of a missing commit: %q", got)
	}
	if got := event.CommitTree(context.Background(), dir, nil, owner, repo, "HEAD"); got != "" {
		t.Fatalf("tree of a ref, not a SHA: %q", got)
	}
}
