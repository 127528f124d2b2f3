package handoff

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/kernel/contract"
)

// opened exports the AWAITING_APPROVAL run of awaiting and opens it: its
// files, its statement and the repository it ran in.
func opened(t *testing.T) (map[string][]byte, *Statement, string) {
	t.Helper()
	dir := awaiting(t)
	k := keytest.New(t)
	data, err := Export(dir, PR{Number: 1}, k.Signer.KeyID(), KeySign(context.Background(), k.Signer))
	if err != nil {
		t.Fatal(err)
	}
	files, st, err := Open(zipped(t, map[string][]byte{"r" + ArchiveSuffix: data}), k.Signer, nil)
	if err != nil {
		t.Fatal(err)
	}
	return files, st, filepath.Dir(filepath.Dir(filepath.Dir(dir)))
}

// Install writes and opens the run; the same log again opens it, another
// log or an invalid id is refused.
func TestInstall(t *testing.T) {
	files, st, _ := opened(t)
	state, id := t.TempDir(), st.Predicate.Run.RunID
	if _, err := Install(state, "../x", files); reasonOf(err) != Malformed {
		t.Fatalf("invalid id: %v", err)
	}
	for i := 0; i < 2; i++ {
		r, err := Install(state, id, files)
		if err != nil || r.ID != id {
			t.Fatalf("install %d: %v", i, err)
		}
		r.Close()
	}
	other := with(files, bundle.EventsFile, append(bytes.Clone(files[bundle.EventsFile]), '\n'))
	if _, err := Install(state, id, other); reasonOf(err) != Exists {
		t.Fatalf("another log: %v", err)
	}
}

// Binding.Check refuses a run of another repository, contract or profile,
// or commit than the checkout's; checkPR a statement for another PR.
func TestBinding(t *testing.T) {
	_, st, repo := opened(t)
	c, err := contract.Parse("contract.yaml", []byte(contractYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{Repo: st.Predicate.Run.Repo, Contract: c, WorkTree: repo}
	otherRepo, otherProfile, noCheckout := b, b, b
	otherRepo.Repo = "other/repo"
	pc := *c
	pc.Profile = "fast"
	otherProfile.Contract = &pc
	noCheckout.WorkTree = t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		err  error
		want Reason
	}{
		{"bound", b.checkPR(ctx, st, PR{Number: 1}), ""},
		{"another PR", b.checkPR(ctx, st, PR{Number: 2}), OtherHead},
		{"another repository", otherRepo.Check(ctx, st.Predicate.Run, "%s %s", "%s %s"), OtherRepo},
		{"another profile", otherProfile.Check(ctx, st.Predicate.Run, "%s %s", "%s %s"), OtherContract},
		{"no checkout", noCheckout.Check(ctx, st.Predicate.Run, "%s %s", "%s %s"), Checkout},
	} {
		if got := reasonOf(tc.err); got != tc.want || (tc.want == "") != (tc.err == nil) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	if out, err := exec.Command("git", "-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "moved").CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	if err := b.Check(ctx, st.Predicate.Run, "%s %s", "%s %s"); reasonOf(err) != Checkout {
		t.Fatalf("a moved checkout: %v", err)
	}
}

// find takes the newest trusted artifact for the head, the highest id of
// equally new ones, and says why there is none.
func TestFind(t *testing.T) {
	const owner, repo, name = "acme", "widget", "proofgate-run-x"
	head, other := strings.Repeat("a", 40), strings.Repeat("b", 40)
	srv := githubtest.New(t)
	srv.AddRepo(owner, repo)
	srv.Token = "ghs_read"
	ctx := context.Background()
	gh, err := ghapi.NewClient(ctx, "ghs_read", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := find(ctx, gh, owner, repo, name, head); reasonOf(err) != NotFound || !strings.Contains(err.Error(), "for head "+head[:12]) {
		t.Fatalf("none: %v", err)
	}
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: name, HeadSHA: head, HeadRepositoryID: 99})
	if _, err := find(ctx, gh, owner, repo, name, head); reasonOf(err) != Fork {
		t.Fatalf("a fork's: %v", err)
	}
	at := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	srv.AddArtifact(owner, repo, githubtest.Artifact{ID: 7, Name: name, HeadSHA: head, CreatedAt: at})
	srv.AddArtifact(owner, repo, githubtest.Artifact{ID: 9, Name: name, HeadSHA: head, CreatedAt: at})
	srv.AddArtifact(owner, repo, githubtest.Artifact{ID: 8, Name: name, HeadSHA: head, CreatedAt: at})
	srv.AddArtifact(owner, repo, githubtest.Artifact{ID: 10, Name: name, HeadSHA: other, CreatedAt: at.Add(time.Hour)})
	if a, err := find(ctx, gh, owner, repo, name, head); err != nil || a.ID != 9 {
		t.Fatalf("want id 9: %+v %v", a, err)
	}
	srv.Token = "wrong"
	if _, err := find(ctx, gh, owner, repo, name, head); reasonOf(err) != GitHubAPI || !strings.HasPrefix(err.Error(), "github-api: list artifacts "+name+": ") {
		t.Fatalf("a failed listing: %v", err)
	}
}
