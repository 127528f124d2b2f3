package event_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/githubtest"
)

const (
	owner = "acme"
	repo  = "widget"
	head  = "1111111111111111111111111111111111111111"
	base  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var alice = githubtest.User{Login: "alice", ID: 1}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestReviewEventFromFake(t *testing.T) {
	srv := githubtest.New(t)
	srv.AddPR(owner, repo, githubtest.PR{Number: 7, Author: alice, HeadSHA: head, BaseSHA: base})
	id := srv.AddReview(owner, repo, 7, githubtest.Review{User: githubtest.User{Login: "bob", ID: 2}, State: "APPROVED", CommitID: head})
	p, err := srv.WriteReviewEvent(t.TempDir(), owner, repo, 7, id)
	if err != nil {
		t.Fatal(err)
	}
	c, err := event.Load(env(map[string]string{"GITHUB_EVENT_NAME": "pull_request_review", "GITHUB_EVENT_PATH": p}))
	if err != nil {
		t.Fatal(err)
	}
	if c.PR != 7 || c.HeadSHA != head || c.BaseSHA != base || c.BaseRef != "main" || c.Fork ||
		c.Author.Login != "alice" || c.Author.ID != 1 || c.Repository != "acme/widget" {
		t.Fatalf("context: %+v", c)
	}
	if c.Review == nil || c.Review.ID != id || c.Review.State != "approved" || c.Review.CommitID != head {
		t.Fatalf("review (lower-case state in the payload): %+v", c.Review)
	}
}

func TestForkPullRequest(t *testing.T) {
	srv := githubtest.New(t)
	srv.AddPR(owner, repo, githubtest.PR{Number: 8, Author: alice, HeadSHA: head, BaseSHA: base, HeadRepo: "mallory/widget"})
	p, err := srv.WritePullRequestEvent(t.TempDir(), owner, repo, 8, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := event.Load(env(map[string]string{"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": p}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Fork || c.HeadRepo != "mallory/widget" || c.BaseRepo != "acme/widget" {
		t.Fatalf("fork not flagged: %+v", c)
	}
	// A deleted fork (head.repo null) is still a fork.
	data, _ := os.ReadFile(p)
	data = []byte(strings.Replace(string(data), `"full_name": "mallory/widget"`, `"gone": true`, 1))
	c, err = event.Parse("pull_request", data)
	if err != nil || !c.Fork {
		t.Fatalf("deleted fork: %+v %v", c, err)
	}
}

func TestParseRefusesNamingTheField(t *testing.T) {
	good := `{"pull_request":{"number":1,"user":{"login":"a","id":1},"head":{"sha":"` + head + `","repo":{"full_name":"o/r"}},"base":{"sha":"` + base + `","repo":{"full_name":"o/r"}}}}`
	if _, err := event.Parse("pull_request", []byte(good)); err != nil {
		t.Fatal(err)
	}
	for field, payload := range map[string]string{
		"pull_request is missing": `{}`,
		"pull_request.number":     strings.Replace(good, `"number":1`, `"number":0`, 1),
		"pull_request.head.sha":   strings.Replace(good, head, "HEAD", 1),
		"pull_request.base.sha":   strings.Replace(good, base, base[:39], 1),
		"base.repo.full_name":     strings.Replace(good, `"base":{"sha":"`+base+`","repo":{"full_name":"o/r"}}`, `"base":{"sha":"`+base+`"}`, 1),
		"pull_request.user":       strings.Replace(good, `"user":{"login":"a","id":1},`, ``, 1),
		"event payload":           `{"pull_request":`,
	} {
		_, err := event.Parse("pull_request", []byte(payload))
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: got %v", field, err)
		}
	}
	if _, err := event.Parse("pull_request_review", []byte(good)); err == nil || !strings.Contains(err.Error(), "review") {
		t.Errorf("review event without review: %v", err)
	}
	// Other events carry no PR and are not an error.
	c, err := event.Parse("push", []byte(`{"repository":{"full_name":"o/r"}}`))
	if err != nil || c.IsPullRequest() || c.Repository != "o/r" {
		t.Fatalf("push: %+v %v", c, err)
	}
	if _, err := event.Load(env(map[string]string{"GITHUB_EVENT_NAME": "push"})); err == nil {
		t.Fatal("missing GITHUB_EVENT_PATH accepted")
	}
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

const (
	baseContract = "checks:\n  - id: test\n    run: [go, test]\n  - id: vet\n    run: [go, vet]\n"
	prContract   = "checks:\n  - id: test\n    run: [go, test]\n" // drops vet
	cpath        = ".proofgate/contract.yaml"
)

// repoWithPR makes a real repository whose base commit has baseContract and
// whose PR head edits the contract to drop a check.
func repoWithPR(t *testing.T) (dir, baseSHA string) {
	dir = t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	os.MkdirAll(filepath.Join(dir, ".proofgate"), 0o755)
	os.WriteFile(filepath.Join(dir, cpath), []byte(baseContract), 0o644)
	run(t, dir, "add", ".")
	run(t, dir, "commit", "-q", "-m", "base")
	baseSHA = run(t, dir, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(dir, cpath), []byte(prContract), 0o644)
	run(t, dir, "commit", "-q", "-am", "drop vet")
	return dir, baseSHA
}

func TestBaseContractFromGit(t *testing.T) {
	dir, baseSHA := repoWithPR(t)
	got, err := event.ContractAt(context.Background(), dir, nil, owner, repo, baseSHA, cpath)
	if err != nil || string(got) != baseContract {
		t.Fatalf("base contract: %q %v", got, err)
	}
	changed, err := event.ContractChanged(got, filepath.Join(dir, cpath))
	if err != nil || !changed {
		t.Fatalf("a PR that drops a check must show as changed: %v %v", changed, err)
	}
	same, err := event.ContractChanged([]byte(prContract), filepath.Join(dir, cpath))
	if err != nil || same {
		t.Fatalf("identical contract reported changed")
	}
	if ch, _ := event.ContractChanged(got, filepath.Join(dir, "nope")); !ch {
		t.Fatal("deleted contract not reported as changed")
	}
	// A path the base does not have.
	if _, err := event.ContractAt(context.Background(), dir, nil, owner, repo, baseSHA, "other.yaml"); !errors.Is(err, event.ErrNotInBase) {
		t.Fatalf("want ErrNotInBase, got %v", err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "-x", "a/../b", ""} {
		if _, err := event.ContractAt(context.Background(), dir, nil, owner, repo, baseSHA, bad); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
	if _, err := event.ContractAt(context.Background(), dir, nil, owner, repo, "HEAD", cpath); err == nil {
		t.Error("symbolic ref accepted as base SHA")
	}
}

func TestBaseContractFallsBackToAPI(t *testing.T) {
	// A shallow checkout of the PR head lacks the base commit.
	src, baseSHA := repoWithPR(t)
	shallow := filepath.Join(t.TempDir(), "clone")
	run(t, filepath.Dir(shallow), "clone", "-q", "--depth=1", "file://"+src, shallow)
	if out, err := exec.Command("git", "-C", shallow, "cat-file", "-e", baseSHA+"^{commit}").CombinedOutput(); err == nil {
		t.Fatalf("shallow clone unexpectedly has the base commit: %s", out)
	}
	srv := githubtest.New(t)
	srv.Token = "tok"
	srv.SetContent(owner, repo, baseSHA, cpath, []byte(baseContract+strings.Repeat("# pad\n", 50)))
	gh, err := ghapi.NewClient(context.Background(), "tok", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := event.ContractAt(context.Background(), shallow, gh, owner, repo, baseSHA, cpath)
	if err != nil || !strings.HasPrefix(string(got), baseContract) {
		t.Fatalf("API fallback: %q %v", got, err)
	}
	if srv.Count("GET", "/contents/"+cpath) != 1 {
		t.Fatal("contents API not used")
	}
	// Without API access the failure is explicit.
	if _, err := event.ContractAt(context.Background(), shallow, nil, owner, repo, baseSHA, cpath); err == nil {
		t.Fatal("no git commit and no API must fail")
	}
	// Missing on the base via the API.
	if _, err := event.ContractAt(context.Background(), shallow, gh, owner, repo, baseSHA, "other.yaml"); !errors.Is(err, event.ErrNotInBase) {
		t.Fatalf("want ErrNotInBase via API, got %v", err)
	}
}

// TestParseRefusesCollidingMembers: the payload is an open format (GitHub
// adds members), but a duplicate or a case variant of a member a decision
// reads is refused with its path: encoding/json let "SHA" or a second
// "sha" replace the head commit.
func TestParseRefusesCollidingMembers(t *testing.T) {
	good := `{"pull_request":{"number":1,"user":{"login":"a","id":1},"head":{"sha":"` + head + `","repo":{"full_name":"o/r"}},"base":{"sha":"` + base + `","repo":{"full_name":"o/r"}}},"extra":{"x":1}}`
	if _, err := event.Parse("pull_request", []byte(good)); err != nil {
		t.Fatal(err)
	}
	for path, payload := range map[string]string{
		"pull_request.head.SHA":  strings.Replace(good, `"head":{"sha":"`+head+`"`, `"head":{"sha":"`+head+`","SHA":"`+base+`"`, 1),
		"pull_request.head.sha":  strings.Replace(good, `"head":{"sha":"`+head+`"`, `"head":{"sha":"`+base+`","sha":"`+head+`"`, 1),
		"pull_request.Number":    strings.Replace(good, `"number":1`, `"number":1,"Number":2`, 1),
		"pull_request.user.ID":   strings.Replace(good, `"id":1}`, `"id":1,"ID":2}`, 1),
		"extra.x":                strings.Replace(good, `{"x":1}`, `{"x":1,"x":2}`, 1),
		"pull_request.base.repo": strings.Replace(good, `"base":{"sha":"`+base+`","repo":{"full_name":"o/r"}}`, `"base":{"sha":"`+base+`","repo":{"full_name":"o/r"},"repo":{"full_name":"x/y"}}`, 1),
	} {
		_, err := event.Parse("pull_request", []byte(payload))
		if err == nil || !strings.Contains(err.Error(), path+": ") {
			t.Errorf("%s: got %v", path, err)
		}
	}
}

// TestRefEvents: a push payload's ref and after and a workflow_dispatch's
// ref are read (they decide the cache scope with GITHUB_REF and
// GITHUB_SHA); a duplicate or case variant of either, or a non-string, is
// refused naming it; other events never carry them.
func TestRefEvents(t *testing.T) {
	dir := t.TempDir()
	gh := githubtest.New(t)
	p, err := gh.WritePushEvent(dir, owner, repo, "refs/heads/main", head)
	if err != nil {
		t.Fatal(err)
	}
	c, err := event.Load(env(map[string]string{"GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": p}))
	if err != nil || c.Ref != "refs/heads/main" || c.After != head || c.DefaultBranch != githubtest.DefaultBranch || c.PR != 0 {
		t.Fatalf("push: %+v %v", c, err)
	}
	p, err = gh.WriteDispatchEvent(dir, owner, repo, "refs/heads/topic")
	if err != nil {
		t.Fatal(err)
	}
	c, err = event.Load(env(map[string]string{"GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_EVENT_PATH": p}))
	if err != nil || c.Ref != "refs/heads/topic" || c.After != "" {
		t.Fatalf("workflow_dispatch: %+v %v", c, err)
	}
	// A create event's ref is a short name: not read.
	c, err = event.Parse("create", []byte(`{"ref":"main","after":"`+head+`","ref_type":"branch"}`))
	if err != nil || c.Ref != "" || c.After != "" {
		t.Fatalf("create: %+v %v", c, err)
	}
	good := `{"ref":"refs/heads/main","after":"` + head + `","repository":{"full_name":"o/r","default_branch":"main"}}`
	for path, payload := range map[string]string{
		"ref":   strings.Replace(good, `"ref":"refs/heads/main"`, `"ref":"refs/heads/topic","ref":"refs/heads/main"`, 1),
		"Ref":   strings.Replace(good, `"ref":"refs/heads/main"`, `"ref":"refs/heads/main","Ref":"refs/heads/topic"`, 1),
		"after": strings.Replace(good, `"after":"`+head+`"`, `"after":1`, 1),
	} {
		if _, err := event.Parse("push", []byte(payload)); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v", path, err)
		}
	}
}
