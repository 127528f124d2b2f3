// Package status reports a run's state on a GitHub commit, as a commit
// status or a check run named Context, which branch protection or a
// ruleset can require: the mapping of a run state to the state reported,
// its description, and the POST that reports it.
package status

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Modes of reporting (the action's input status), the status context and
// GitHub's bound on a description.
const (
	ModeCommit   = "status"    // POST /repos/{o}/{r}/statuses/{sha}; needs statuses: write
	ModeCheckRun = "check-run" // POST /repos/{o}/{r}/check-runs; needs checks: write
	ModeNone     = "none"
	// Context is the status context and the check run's name.
	Context = "proofgate"
	// MaxDescription is GitHub's limit on a commit status's description,
	// in characters (longer ones answer 422).
	MaxDescription = 140
)

// ParseMode is mode s (any case) of reporting; "" is ModeCommit.
func ParseMode(s string) (string, error) {
	switch m := strings.ToLower(s); m {
	case "":
		return ModeCommit, nil
	case ModeCommit, ModeCheckRun, ModeNone:
		return m, nil
	default:
		return "", fmt.Errorf("%q is not status, check-run or none", m)
	}
}

// Commit status states (GitHub's enum).
const (
	Pending = "pending"
	Success = "success"
	Failure = "failure"
	Error   = "error"
)

// Report is one report of the run's state.
type Report struct {
	State       string // pending | success | failure | error
	Description string // ≤ MaxDescription characters once sent
	TargetURL   string // the workflow run (its job summary); "" for none
}

// WaitingFor is the text of a pending status: who may approve under the
// contract's approval rule. It is the one place that names the rule, so
// richer rules (named rules, teams, code owners) feed their text here.
func WaitingFor(a contract.Approval) string {
	roles := "write access"
	if len(a.Roles) > 0 {
		roles = strings.Join(a.Roles, "/")
	}
	n := a.Required
	noun := "approval"
	if n != 1 {
		noun = "approvals"
	}
	return fmt.Sprintf("waiting for: %d %s by %s", n, noun, roles)
}

// For maps a run state to the status reported: COMPLETE succeeds,
// AWAITING_APPROVAL is pending with waiting, every other settled state
// fails (BLOCKED, REJECTED, STALE, …).
func For(st replay.State, waiting string) (state, description string) {
	switch st {
	case replay.Complete:
		return Success, "COMPLETE: checks passed and approval recorded"
	case replay.AwaitingApproval:
		return Pending, "checks passed; " + waiting
	case "":
		return Error, "the ProofGate job failed before the run settled"
	}
	return Failure, string(st)
}

// ClipDescription makes s a valid status description: printable, at most
// MaxDescription characters, cut on a rune boundary with "…".
func ClipDescription(s string) string {
	s = printable.Escape(s)
	if utf8.RuneCountInString(s) <= MaxDescription {
		return s
	}
	r := []rune(s)
	return string(r[:MaxDescription-1]) + "…"
}

// RunURL is the workflow run's page, whose job summary shows the run:
// GITHUB_SERVER_URL/GITHUB_REPOSITORY/actions/runs/GITHUB_RUN_ID ("" when
// any is missing).
func RunURL(getenv func(string) string) string {
	server, repo, id := strings.TrimRight(getenv("GITHUB_SERVER_URL"), "/"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID")
	if server == "" || repo == "" || id == "" || strings.ContainsAny(id, "/?#") {
		return ""
	}
	u := server + "/" + repo + "/actions/runs/" + url.PathEscape(id)
	if a := getenv("GITHUB_RUN_ATTEMPT"); a != "" && a != "1" && !strings.ContainsAny(a, "/?#") {
		u += "/attempts/" + url.PathEscape(a)
	}
	return u
}

// PermissionError is a status the token may not post (HTTP 403): the job
// warns and goes on, since the evidence does not depend on it.
type PermissionError struct {
	Mode       string
	Permission string // "statuses: write" or "checks: write"
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("the token may not post the %s (HTTP 403): give the job `permissions: %s`", e.Mode, e.Permission)
}

// Post reports r on commit sha of owner/repo in mode.
func Post(ctx context.Context, gh *github.Client, mode, owner, repo, sha string, r Report) error {
	var path string
	var body any
	perm := "statuses: write"
	desc := ClipDescription(r.Description)
	switch mode {
	case ModeCommit:
		path = fmt.Sprintf("repos/%s/%s/statuses/%s", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(sha))
		b := map[string]string{"state": r.State, "context": Context, "description": desc}
		if r.TargetURL != "" {
			b["target_url"] = r.TargetURL
		}
		body = b
	case ModeCheckRun:
		perm = "checks: write"
		path = fmt.Sprintf("repos/%s/%s/check-runs", url.PathEscape(owner), url.PathEscape(repo))
		body = checkRunBody(sha, desc, r)
	default:
		return fmt.Errorf("status mode %q is not %s or %s", mode, ModeCommit, ModeCheckRun)
	}
	req, err := gh.NewRequest(http.MethodPost, path, body)
	if err != nil {
		return err
	}
	_, err = gh.Do(ctx, req, nil)
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden {
		return &PermissionError{Mode: ModeNoun(mode), Permission: perm}
	}
	return err
}

// ModeNoun names what mode posts: a check run or a commit status.
func ModeNoun(mode string) string {
	if mode == ModeCheckRun {
		return "check run"
	}
	return "commit status"
}

// checkRunBody is the check run for r: pending is in_progress, the rest
// completed with the matching conclusion.
func checkRunBody(sha, desc string, r Report) map[string]any {
	b := map[string]any{"name": Context, "head_sha": sha,
		"output": map[string]string{"title": "ProofGate: " + r.State, "summary": desc}}
	if r.TargetURL != "" {
		b["details_url"] = r.TargetURL
	}
	switch r.State {
	case Pending:
		b["status"] = "in_progress"
	case Success:
		b["status"], b["conclusion"] = "completed", "success"
	default:
		b["status"], b["conclusion"] = "completed", "failure"
	}
	return b
}
