package artifact_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/githubtest"
)

// Own keeps the unexpired artifacts of the name of this repository's
// workflow runs, newest first; a fork's are counted, not kept; with a head,
// only that head's are kept or counted.
func TestOwn(t *testing.T) {
	srv := githubtest.New(t)
	srv.AddRepo(owner, repo)
	gh := client(t, srv)
	ctx := context.Background()
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	if own, fork, err := artifact.Own(ctx, gh, owner, repo, "b", ""); err != nil || len(own) != 0 || fork != 0 {
		t.Fatalf("none: %v %d %v", own, fork, err)
	}
	older := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, CreatedAt: base})
	newer := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: other, CreatedAt: base.Add(time.Hour)})
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, CreatedAt: base.Add(2 * time.Hour), Expired: true})
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, CreatedAt: base.Add(3 * time.Hour), HeadRepositoryID: 99})
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "c", HeadSHA: sha, CreatedAt: base.Add(4 * time.Hour)})
	own, fork, err := artifact.Own(ctx, gh, owner, repo, "b", "")
	if err != nil || fork != 1 || len(own) != 2 || own[0].ID != newer || own[1].ID != older {
		t.Fatalf("any head: %+v fork %d %v", own, fork, err)
	}
	own, fork, err = artifact.Own(ctx, gh, owner, repo, "b", other)
	if err != nil || fork != 0 || len(own) != 1 || own[0].ID != newer {
		t.Fatalf("head %s: %+v fork %d %v", other, own, fork, err)
	}
	srv.Token = "wrong"
	if _, _, err := artifact.Own(ctx, gh, owner, repo, "b", ""); err == nil || !strings.HasPrefix(err.Error(), "list artifacts b: ") {
		t.Fatalf("a failed listing: %v", err)
	}
}
