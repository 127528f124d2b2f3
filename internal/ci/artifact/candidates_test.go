package artifact_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/githubtest"
)

func companionOf(archive string) string {
	return strings.TrimSuffix(archive, ".tar.gz") + ".sigstore.json"
}

func TestBundleFromZip(t *testing.T) {
	z, err := artifact.Zip(map[string][]byte{"r.bundle.tar.gz": []byte("b"), "r.bundle.sigstore.json": []byte("c")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := artifact.BundleFromZip(z, 1<<20, companionOf)
	if err != nil || b.Name != "r.bundle.tar.gz" || string(b.Data) != "b" || b.Companion != "r.bundle.sigstore.json" || string(b.CompanionData) != "c" {
		t.Fatalf("bundle %+v, %v", b, err)
	}
	for _, files := range []map[string][]byte{
		{"a.tar.gz": nil, "b.tar.gz": nil},
		{"a.tar.gz": nil, "notes.txt": nil},
	} {
		z, err := artifact.Zip(files)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := artifact.BundleFromZip(z, 1<<20, companionOf); err == nil {
			t.Fatalf("accepted %v", files)
		}
	}
}

// Without an artifact for the commit or its pull requests' heads, the scan
// keeps the newest artifacts with the prefix but none excluded.
func TestCandidatesScan(t *testing.T) {
	srv := githubtest.New(t)
	srv.AddRepo(owner, repo)
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	older := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "p-" + other, HeadSHA: other, CreatedAt: base})
	newer := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "p-x", HeadSHA: other, CreatedAt: base.Add(time.Hour)})
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "p-run-x", HeadSHA: other, CreatedAt: base.Add(2 * time.Hour)})
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "q-x", HeadSHA: other, CreatedAt: base.Add(3 * time.Hour)})
	s := artifact.Search{Commit: sha, Prefix: "p-", Exclude: []string{"p-run-"}, NameFor: func(h string) string { return "p-" + h }}
	got, err := artifact.Candidates(context.Background(), client(t, srv), owner, repo, s)
	if err == nil || len(got) != 2 || got[0].ID != newer || got[1].ID != older {
		t.Fatalf("candidates %+v, %v", got, err)
	}
	s.ByCommit = true
	if got, _ := artifact.Candidates(context.Background(), client(t, srv), owner, repo, s); len(got) != 0 {
		t.Fatalf("by commit: %+v", got)
	}
}
