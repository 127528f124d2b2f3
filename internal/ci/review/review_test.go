package review_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/contract"
)

const (
	owner = "acme"
	repo  = "widget"
	prNum = 7
	head  = "1111111111111111111111111111111111111111"
	old   = "0000000000000000000000000000000000000000"
	base  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var (
	author   = githubtest.User{Login: "alice", ID: 1}
	coauthor = githubtest.User{Login: "carol", ID: 3}
	bob      = githubtest.User{Login: "bob", ID: 2}
	dave     = githubtest.User{Login: "dave", ID: 4}
	erin     = githubtest.User{Login: "erin", ID: 5}
	rule1    = contract.Approval{Required: 1, Roles: []string{"write", "maintain", "admin"}}
	rule2    = contract.Approval{Required: 2, Roles: []string{"write", "maintain", "admin"}}
)

type fixture struct {
	t   *testing.T
	srv *githubtest.Server
	gh  *github.Client
}

func setup(t *testing.T) *fixture {
	t.Helper()
	srv := githubtest.New(t)
	srv.Token = "ghs_test"
	srv.AddPR(owner, repo, githubtest.PR{Number: prNum, Author: author, HeadSHA: head, BaseSHA: base})
	srv.AddCommit(owner, repo, prNum, githubtest.Commit{SHA: old, Author: &author, Committer: &author})
	srv.AddCommit(owner, repo, prNum, githubtest.Commit{SHA: head, Author: &author, Committer: &author})
	for _, u := range []githubtest.User{author, coauthor, bob, dave, erin} {
		srv.SetPermission(owner, repo, u.Login, githubtest.Permission{Permission: "write", RoleName: "write"})
	}
	gh, err := ghapi.NewClient(context.Background(), "ghs_test", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t, srv, gh}
}

func (f *fixture) review(u githubtest.User, state, commit string) int64 {
	return f.srv.AddReview(owner, repo, prNum, githubtest.Review{User: u, State: state, CommitID: commit})
}

func (f *fixture) decide(rule contract.Approval) (review.Decision, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return review.Decide(ctx, f.gh, owner, repo, prNum, head, rule)
}

// mustRefuse asserts the decision is not satisfied and that the given user's
// review was ignored for the given reason.
func mustRefuse(t *testing.T, d review.Decision, err error, login string, reason review.Reason) {
	t.Helper()
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if d.Satisfied || len(d.Counted) != 0 {
		t.Fatalf("false approval: %+v", d)
	}
	for _, ig := range d.Ignored {
		if ig.Login == login && ig.Reason == reason {
			if ig.Why == "" {
				t.Fatalf("ignored without explanation: %+v", ig)
			}
			return
		}
	}
	t.Fatalf("no %s ignore for %s in %+v", reason, login, d.Ignored)
}

func TestApprovedHeadCounts(t *testing.T) {
	f := setup(t)
	id := f.review(bob, review.StateApproved, head)
	d, err := f.decide(rule1)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Satisfied || len(d.Counted) != 1 || d.Missing != 0 {
		t.Fatalf("want satisfied with one approval: %+v", d)
	}
	a := d.Counted[0]
	if a.Login != "bob" || a.UserID != 2 || a.ReviewID != id || a.Commit != head || a.Permission != "write" || a.SubmittedAt.IsZero() {
		t.Fatalf("approval record incomplete: %+v", a)
	}
	// The fake enforces the token: every REST call was authenticated.
	for _, r := range f.srv.Requests() {
		if r.Authorization != "Bearer ghs_test" {
			t.Fatalf("request %s without token: %q", r.Path, r.Authorization)
		}
	}
}

func TestSelfApprovalByAuthor(t *testing.T) {
	f := setup(t)
	f.review(author, review.StateApproved, head)
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "alice", review.ReasonPRAuthor)
	if d.Missing != 1 || !strings.Contains(d.Summary, "missing 1") {
		t.Fatalf("summary should say what is missing: %q", d.Summary)
	}
}

func TestApprovalByCommitAuthor(t *testing.T) {
	f := setup(t)
	f.srv.AddCommit(owner, repo, prNum, githubtest.Commit{SHA: "c1", Author: &coauthor, Committer: &author})
	f.review(coauthor, review.StateApproved, head)
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "carol", review.ReasonCommitAuthor)

	// The contract may allow commit authors.
	allow := rule1
	allow.AllowCommitAuthors = true
	d, err = f.decide(allow)
	if err != nil || !d.Satisfied {
		t.Fatalf("allow_commit_authors should count carol: %+v %v", d, err)
	}
}

func TestApprovalByCommitter(t *testing.T) {
	f := setup(t)
	f.srv.AddCommit(owner, repo, prNum, githubtest.Commit{SHA: "c2", Author: &author, Committer: &dave})
	f.review(dave, review.StateApproved, head)
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "dave", review.ReasonCommitAuthor)
}

func TestApprovalOnOlderCommit(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, old)
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "bob", review.ReasonStaleCommit)
}

func TestApprovalLaterDismissed(t *testing.T) {
	f := setup(t)
	id := f.review(bob, review.StateApproved, head)
	f.srv.DismissReview(owner, repo, prNum, id)
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "bob", review.ReasonDismissed)
}

func TestApprovedThenChangesRequested(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	cr := f.review(bob, review.StateChangesRequested, head)
	f.review(dave, review.StateApproved, head) // enough approvals otherwise
	d, err := f.decide(rule1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Satisfied || len(d.Blocking) != 1 || d.Blocking[0].ReviewID != cr || d.Blocking[0].Login != "bob" {
		t.Fatalf("standing change request must block: %+v", d)
	}
	if !strings.Contains(d.Summary, "blocked by changes requested by bob") {
		t.Fatalf("summary: %q", d.Summary)
	}
	// bob's earlier approval was superseded, dave's counted.
	if len(d.Counted) != 1 || d.Counted[0].Login != "dave" {
		t.Fatalf("counted: %+v", d.Counted)
	}
}

func TestChangesRequestedThenApproved(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateChangesRequested, old)
	f.review(bob, review.StateApproved, head)
	d, err := f.decide(rule1)
	if err != nil || !d.Satisfied || len(d.Blocking) != 0 {
		t.Fatalf("a later approval by the same person lifts the block: %+v %v", d, err)
	}
}

func TestCommentedAfterApprovedStands(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	f.review(bob, review.StateCommented, head)
	d, err := f.decide(rule1)
	if err != nil || !d.Satisfied || len(d.Counted) != 1 {
		t.Fatalf("approval must stand after a comment: %+v %v", d, err)
	}
}

func TestReadOnlyAndTriageReviewer(t *testing.T) {
	f := setup(t)
	f.srv.SetPermission(owner, repo, "bob", githubtest.Permission{Permission: "read", RoleName: "read"})
	f.srv.SetPermission(owner, repo, "dave", githubtest.Permission{Permission: "read", RoleName: "triage"})
	f.review(bob, review.StateApproved, head)
	f.review(dave, review.StateApproved, head)
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "bob", review.ReasonPermission)
	mustRefuse(t, d, err, "dave", review.ReasonPermission)
}

func TestMaintainRoleName(t *testing.T) {
	f := setup(t)
	// maintain is reported as permission "write" with role_name "maintain".
	f.srv.SetPermission(owner, repo, "bob", githubtest.Permission{Permission: "write", RoleName: "maintain"})
	f.review(bob, review.StateApproved, head)
	d, err := f.decide(contract.Approval{Required: 1, Roles: []string{"maintain"}})
	if err != nil || !d.Satisfied || d.Counted[0].Permission != "maintain" {
		t.Fatalf("maintain via role_name: %+v %v", d, err)
	}
	// A rule that only admits admins refuses the same approval.
	d, err = f.decide(contract.Approval{Required: 1, Roles: []string{"admin"}})
	mustRefuse(t, d, err, "bob", review.ReasonPermission)
}

func TestNonCollaboratorRefused(t *testing.T) {
	f := setup(t)
	stranger := githubtest.User{Login: "mallory", ID: 66}
	f.review(stranger, review.StateApproved, head) // no permission set: "none"
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "mallory", review.ReasonPermission)
}

func TestBotReviewer(t *testing.T) {
	f := setup(t)
	bot := githubtest.User{Login: "helper", ID: 90, Type: "Bot"}
	suffix := githubtest.User{Login: "renovate[bot]", ID: 91}
	f.srv.SetPermission(owner, repo, "helper", githubtest.Permission{Permission: "admin", RoleName: "admin"})
	f.srv.SetPermission(owner, repo, "renovate[bot]", githubtest.Permission{Permission: "admin", RoleName: "admin"})
	f.review(bot, review.StateApproved, head)
	f.review(suffix, review.StateApproved, head)
	d, err := f.decide(rule1)
	mustRefuse(t, d, err, "helper", review.ReasonBot)
	mustRefuse(t, d, err, "renovate[bot]", review.ReasonBot)
}

func TestSameReviewerTwiceCountsOnce(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	f.review(bob, review.StateApproved, head)
	d, err := f.decide(rule2)
	if err != nil {
		t.Fatal(err)
	}
	if d.Satisfied || len(d.Counted) != 1 || d.Missing != 1 {
		t.Fatalf("two approvals by bob must count once: %+v", d)
	}
}

func TestTwoRequiredOnePresent(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	d, err := f.decide(rule2)
	if err != nil || d.Satisfied || d.Missing != 1 || !strings.Contains(d.Summary, "1 of 2") {
		t.Fatalf("want 1 of 2: %+v %v", d, err)
	}
	f.review(dave, review.StateApproved, head)
	d, err = f.decide(rule2)
	if err != nil || !d.Satisfied || len(d.Counted) != 2 {
		t.Fatalf("want 2 of 2: %+v %v", d, err)
	}
}

func TestHeadMovedBetweenReadAndRecord(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	// The first GET sees the verified head; the second (after reviews) does not.
	f.srv.MoveHeadAfter(owner, repo, prNum, 1, "2222222222222222222222222222222222222222")
	d, err := f.decide(rule1)
	var hm *review.HeadMovedError
	if !errors.As(err, &hm) || hm.Want != head || hm.Got != "2222222222222222222222222222222222222222" {
		t.Fatalf("want HeadMovedError, got %v", err)
	}
	if d.Satisfied {
		t.Fatalf("moved head must not be satisfied: %+v", d)
	}
}

func TestHeadAlreadyMoved(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	f.srv.SetHead(owner, repo, prNum, "3333333333333333333333333333333333333333")
	d, err := f.decide(rule1)
	var hm *review.HeadMovedError
	if !errors.As(err, &hm) || d.Satisfied {
		t.Fatalf("want HeadMovedError and unsatisfied: %+v %v", d, err)
	}
}

func TestManyReviewsAcrossPages(t *testing.T) {
	f := setup(t)
	// 230 comments from a non-qualified reviewer, then approvals: the
	// approvals are on page 3 with per_page=100.
	for i := 0; i < 230; i++ {
		f.review(erin, review.StateCommented, old)
	}
	f.review(bob, review.StateApproved, head)
	f.review(dave, review.StateApproved, head)
	d, err := f.decide(rule2)
	if err != nil || !d.Satisfied {
		t.Fatalf("approvals on page 3 must be seen: %+v %v", d, err)
	}
	if n := f.srv.Count("GET", "/reviews"); n != 3 {
		t.Fatalf("want 3 review pages, got %d", n)
	}
	// And a change request on the last page still blocks.
	f.review(erin, review.StateChangesRequested, head)
	d, err = f.decide(rule2)
	if err != nil || d.Satisfied || len(d.Blocking) != 1 {
		t.Fatalf("change request on the last page must block: %+v %v", d, err)
	}
}

func TestRateLimitedThenSuccess(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	f.srv.Fail("/reviews", http.StatusTooManyRequests, "1", 1)
	start := time.Now()
	d, err := f.decide(rule1)
	if err != nil || !d.Satisfied {
		t.Fatalf("429 then success should decide: %+v %v", d, err)
	}
	if time.Since(start) < time.Second {
		t.Fatalf("Retry-After: 1 was not honoured (%v)", time.Since(start))
	}
	if n := f.srv.Count("GET", "/reviews"); n != 2 {
		t.Fatalf("want one retry, got %d review requests", n)
	}
}

func TestPersistent500IsAnError(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	f.srv.Fail("/permission", http.StatusInternalServerError, "", -1)
	var sleeps []time.Duration
	gh, err := ghapi.NewClientTransport(context.Background(), "ghs_test", f.srv.URL, &ghapi.Retry{
		MaxAttempts: 3,
		Sleep:       func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := review.Decide(context.Background(), gh, owner, repo, prNum, head, rule1)
	if err == nil || d.Satisfied {
		t.Fatalf("persistent 500 must be an error, never approval: %+v %v", d, err)
	}
	if !strings.Contains(err.Error(), "permission of bob") {
		t.Fatalf("error should name what failed: %v", err)
	}
	if len(sleeps) != 2 || f.srv.Count("GET", "/permission") != 3 {
		t.Fatalf("want 3 bounded attempts, slept %v", sleeps)
	}
}

func TestIncompleteCommitListRefused(t *testing.T) {
	f := setup(t)
	for i := 0; i < 260; i++ { // GitHub lists only 250
		f.srv.AddCommit(owner, repo, prNum, githubtest.Commit{SHA: fmt.Sprintf("%040d", i), Author: &author})
	}
	f.review(bob, review.StateApproved, head)
	d, err := f.decide(rule1)
	if !errors.Is(err, review.ErrIncompleteCommits) || d.Satisfied {
		t.Fatalf("want ErrIncompleteCommits: %+v %v", d, err)
	}
}

func TestFindPR(t *testing.T) {
	f := setup(t)
	n, err := review.FindPR(context.Background(), f.gh, owner, repo, head)
	if err != nil || n != prNum {
		t.Fatalf("FindPR = %d, %v", n, err)
	}
	if _, err := review.FindPR(context.Background(), f.gh, owner, repo, "9999999999999999999999999999999999999999"); !errors.Is(err, review.ErrNoPR) {
		t.Fatalf("want ErrNoPR, got %v", err)
	}
}

func TestEnterpriseURL(t *testing.T) {
	f := setup(t)
	f.review(bob, review.StateApproved, head)
	gh, err := ghapi.NewClient(context.Background(), "ghs_test", f.srv.URL+"/api/v3")
	if err != nil {
		t.Fatal(err)
	}
	d, err := review.Decide(context.Background(), gh, owner, repo, prNum, head, rule1)
	if err != nil || !d.Satisfied {
		t.Fatalf("GHES layout: %+v %v", d, err)
	}
	if !strings.HasPrefix(f.srv.Requests()[len(f.srv.Requests())-1].Path, "/api/v3/") {
		t.Fatal("GHES client did not use /api/v3")
	}
}

func TestWrongTokenIsAnError(t *testing.T) {
	f := setup(t)
	gh, err := ghapi.NewClient(context.Background(), "wrong", f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	d, err := review.Decide(context.Background(), gh, owner, repo, prNum, head, rule1)
	if err == nil || d.Satisfied {
		t.Fatalf("bad credentials must fail: %v", err)
	}
}

// TestRefusesCollidingReviewMembers: go-github decoded reviews with
// encoding/json, so "State" (or a second "state") beside "state" decided
// whether a review approved. A payload a decision depends on is decoded
// strictly: the whole evaluation is refused, naming the member.
func TestRefusesCollidingReviewMembers(t *testing.T) {
	user := `{"login":"bob","id":2,"type":"User"}`
	for name, tc := range map[string]struct {
		r    githubtest.Review
		path string
	}{
		"case variant State": {githubtest.Review{User: bob, State: "APPROVED", CommitID: head,
			Extra: map[string]any{"State": "CHANGES_REQUESTED"}}, "[0].State"},
		"case variant Commit_ID": {githubtest.Review{User: bob, State: "APPROVED", CommitID: head,
			Extra: map[string]any{"Commit_ID": old}}, "[0].Commit_ID"},
		"case variant in user": {githubtest.Review{User: bob, State: "APPROVED", CommitID: head,
			Extra: map[string]any{"user": map[string]any{"login": "bob", "id": 2, "ID": 1, "type": "User"}}}, "[0].user.ID"},
		"duplicate state": {githubtest.Review{Raw: []byte(`{"id":9,"user":` + user + `,"state":"CHANGES_REQUESTED","state":"APPROVED","commit_id":"` + head + `","submitted_at":"2025-01-01T00:00:00Z"}`)}, "[0].state"},
		"duplicate user":  {githubtest.Review{Raw: []byte(`{"id":9,"user":{"login":"alice","id":1},"user":` + user + `,"state":"APPROVED","commit_id":"` + head + `","submitted_at":"2025-01-01T00:00:00Z"}`)}, "[0].user"},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			f.srv.AddReview(owner, repo, prNum, tc.r)
			d, err := f.decide(rule1)
			if d.Satisfied {
				t.Fatalf("a colliding review payload approved the run: %+v", d)
			}
			if err == nil || !strings.Contains(err.Error(), tc.path+": ") {
				t.Fatalf("err = %v, want a refusal naming %s", err, tc.path)
			}
		})
	}
}
