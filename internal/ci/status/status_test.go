package status_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
)

const (
	owner = "acme"
	repo  = "widget"
	head  = "1111111111111111111111111111111111111111"
)

func TestClipDescription(t *testing.T) {
	long := strings.Repeat("é", 200) + "\x1b[31m"
	got := status.ClipDescription(long)
	if n := utf8.RuneCountInString(got); n != status.MaxDescription || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("clipped to %d runes: %q", n, got)
	}
	if strings.ContainsRune(status.ClipDescription("a\x1b[31mb\nc"), 0x1b) {
		t.Fatal("an escape reached the description")
	}
	w := status.WaitingFor(contract.Approval{Required: 2, Roles: []string{"admin"}})
	if w != "waiting for: 2 approvals by admin" {
		t.Fatalf("WaitingFor: %q", w)
	}
	// The fake refuses a description over 140 characters as GitHub does:
	// a long rule text still posts once clipped.
	srv := githubtest.New(t)
	srv.AddRepo(owner, repo)
	if err := status.Post(t.Context(), ghClient(t, srv), status.ModeCommit, owner, repo, head, status.Report{State: "pending", Description: long}); err != nil {
		t.Fatal(err)
	}
	if err := status.Post(t.Context(), ghClient(t, srv), status.ModeCommit, owner, repo, head, status.Report{State: "waiting"}); err == nil {
		t.Fatal("the fake accepted a state outside the enum")
	}
}

func ghClient(t *testing.T, srv *githubtest.Server) *github.Client {
	t.Helper()
	srv.Token = "ghs_status"
	c, err := ghapi.NewClient(t.Context(), srv.Token, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRunURL(t *testing.T) {
	env := map[string]string{"GITHUB_SERVER_URL": "https://ghe.example/", "GITHUB_REPOSITORY": "acme/widget", "GITHUB_RUN_ID": "12", "GITHUB_RUN_ATTEMPT": "2"}
	get := func(k string) string { return env[k] }
	if u := status.RunURL(get); u != "https://ghe.example/acme/widget/actions/runs/12/attempts/2" {
		t.Fatalf("RunURL %q", u)
	}
	env["GITHUB_RUN_ID"] = "12/../../x"
	if u := status.RunURL(get); u != "" {
		t.Fatalf("RunURL of a hostile run id: %q", u)
	}
	delete(env, "GITHUB_RUN_ID")
	if u := status.RunURL(get); u != "" {
		t.Fatalf("RunURL without a run id: %q", u)
	}
}

// Each run state maps to the state GitHub shows; a check run is pending
// while in progress and fails for any other state than success.
func TestForAndCheckRun(t *testing.T) {
	for st, want := range map[replay.State]string{replay.Complete: status.Success, replay.AwaitingApproval: status.Pending, "": status.Error, "BLOCKED": status.Failure} {
		if got, _ := status.For(st, "w"); got != want {
			t.Errorf("For(%q) = %s, want %s", st, got, want)
		}
	}
	srv := githubtest.New(t)
	srv.AddRepo(owner, repo)
	srv.Deny("checks")
	err := status.Post(t.Context(), ghClient(t, srv), status.ModeCheckRun, owner, repo, head, status.Report{State: status.Pending})
	var pe *status.PermissionError
	if !errors.As(err, &pe) || pe.Permission != "checks: write" || pe.Mode != "check run" {
		t.Fatalf("denied check run: %v", err)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{"": status.ModeCommit, "Status": status.ModeCommit, "CHECK-RUN": status.ModeCheckRun, "none": status.ModeNone} {
		if got, err := status.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := status.ParseMode("Both"); err == nil || err.Error() != `"both" is not status, check-run or none` {
		t.Fatalf("ParseMode(Both): %v", err)
	}
}
