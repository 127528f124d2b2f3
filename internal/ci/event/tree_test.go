package event_test

import (
	"context"
	"strings"
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

func TestHead(t *testing.T) {
	dir, _ := repoWithPR(t)
	want := run(t, dir, "rev-parse", "HEAD")
	if got, err := event.Head(context.Background(), dir); err != nil || got != want {
		t.Fatalf("head %q (%v), want %q", got, err, want)
	}
	if got, err := event.Head(context.Background(), t.TempDir()); err == nil || got != "" || !strings.HasPrefix(err.Error(), "git rev-parse HEAD: ") {
		t.Fatalf("head of no checkout: %q %v", got, err)
	}
}

func TestShortSHA(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "abc", strings.Repeat("a", 40): strings.Repeat("a", 12)} {
		if got := event.ShortSHA(in); got != want {
			t.Errorf("ShortSHA(%q) = %q, want %q", in, got, want)
		}
	}
}
