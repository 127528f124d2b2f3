package action

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

// Status reporting (input status): the action reports the run's state on
// the commit it is about (the PR head, the merge group's head, the pushed
// commit) as a commit status or a check run named StatusContext, which
// branch protection or a ruleset can require.
const (
	StatusModeCommit   = "status"    // POST /repos/{o}/{r}/statuses/{sha}; needs statuses: write
	StatusModeCheckRun = "check-run" // POST /repos/{o}/{r}/check-runs; needs checks: write
	StatusModeNone     = "none"
	// StatusContext is the status context and the check run's name.
	StatusContext = "proofgate"
	// MaxStatusDescription is GitHub's limit on a commit status's
	// description, in characters (longer ones answer 422).
	MaxStatusDescription = 140
)

// Commit status states (GitHub's enum).
const (
	StatusPending = "pending"
	StatusSuccess = "success"
	StatusFailure = "failure"
	StatusError   = "error"
)

// StatusReport is one report of the run's state.
type StatusReport struct {
	State       string // pending | success | failure | error
	Description string // ≤ MaxStatusDescription characters once sent
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

// StatusFor maps a run state to the status reported: COMPLETE succeeds,
// AWAITING_APPROVAL is pending with waiting, every other settled state
// fails (BLOCKED, REJECTED, STALE, …).
func StatusFor(st replay.State, waiting string) (state, description string) {
	switch st {
	case replay.Complete:
		return StatusSuccess, "COMPLETE: checks passed and approval recorded"
	case replay.AwaitingApproval:
		return StatusPending, "checks passed; " + waiting
	case "":
		return StatusError, "the ProofGate job failed before the run settled"
	}
	return StatusFailure, string(st)
}

// ClipDescription makes s a valid status description: printable, at most
// MaxStatusDescription characters, cut on a rune boundary with "…".
func ClipDescription(s string) string {
	s = printable.Escape(s)
	if utf8.RuneCountInString(s) <= MaxStatusDescription {
		return s
	}
	r := []rune(s)
	return string(r[:MaxStatusDescription-1]) + "…"
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

// StatusPermissionError is a status the token may not post (HTTP 403): the
// job warns and goes on, since the evidence does not depend on it.
type StatusPermissionError struct {
	Mode       string
	Permission string // "statuses: write" or "checks: write"
}

func (e *StatusPermissionError) Error() string {
	return fmt.Sprintf("the token may not post the %s (HTTP 403): give the job `permissions: %s`", e.Mode, e.Permission)
}

// PostStatus reports r on commit sha of owner/repo in mode.
func PostStatus(ctx context.Context, gh *github.Client, mode, owner, repo, sha string, r StatusReport) error {
	var path string
	var body any
	perm := "statuses: write"
	desc := ClipDescription(r.Description)
	switch mode {
	case StatusModeCommit:
		path = fmt.Sprintf("repos/%s/%s/statuses/%s", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(sha))
		b := map[string]string{"state": r.State, "context": StatusContext, "description": desc}
		if r.TargetURL != "" {
			b["target_url"] = r.TargetURL
		}
		body = b
	case StatusModeCheckRun:
		perm = "checks: write"
		path = fmt.Sprintf("repos/%s/%s/check-runs", url.PathEscape(owner), url.PathEscape(repo))
		body = checkRunBody(sha, desc, r)
	default:
		return fmt.Errorf("status mode %q is not %s or %s", mode, StatusModeCommit, StatusModeCheckRun)
	}
	req, err := gh.NewRequest(http.MethodPost, path, body)
	if err != nil {
		return err
	}
	_, err = gh.Do(ctx, req, nil)
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden {
		return &StatusPermissionError{Mode: modeNoun(mode), Permission: perm}
	}
	return err
}

func modeNoun(mode string) string {
	if mode == StatusModeCheckRun {
		return "check run"
	}
	return "commit status"
}

// checkRunBody is the check run for r: pending is in_progress, the rest
// completed with the matching conclusion.
func checkRunBody(sha, desc string, r StatusReport) map[string]any {
	b := map[string]any{"name": StatusContext, "head_sha": sha,
		"output": map[string]string{"title": "ProofGate: " + r.State, "summary": desc}}
	if r.TargetURL != "" {
		b["details_url"] = r.TargetURL
	}
	switch r.State {
	case StatusPending:
		b["status"] = "in_progress"
	case StatusSuccess:
		b["status"], b["conclusion"] = "completed", "success"
	default:
		b["status"], b["conclusion"] = "completed", "failure"
	}
	return b
}

// readStatusMode reads input status.
func readStatusMode(f *workflow) (string, error) {
	switch m := strings.ToLower(f.input("status")); m {
	case "":
		return StatusModeCommit, nil
	case StatusModeCommit, StatusModeCheckRun, StatusModeNone:
		return m, nil
	default:
		return "", fmt.Errorf("input status: %q is not status, check-run or none", m)
	}
}

// statusSHA is the commit the status is about: the PR head, the merge
// group's head, else GITHUB_SHA.
func (j *job) statusSHA() string {
	if j.ev != nil && j.ev.HeadSHA != "" {
		return j.ev.HeadSHA
	}
	return j.o.Getenv("GITHUB_SHA")
}

// report posts the status for the job's outcome; a failure to post is a
// warning, never the job's failure.
func (j *job) report(ctx context.Context, state, desc string) {
	if j.statusMode == "" || j.statusMode == StatusModeNone || j.gh == nil {
		return
	}
	sha := j.statusSHA()
	if sha == "" {
		return
	}
	err := PostStatus(ctx, j.gh, j.statusMode, j.owner, j.name, sha, StatusReport{State: state, Description: desc, TargetURL: RunURL(j.o.Getenv)})
	var pe *StatusPermissionError
	switch {
	case errors.As(err, &pe):
		j.f.annotate("warning", "ProofGate status not posted", pe.Error()+" (or input status: none); the evidence is unaffected")
	case err != nil:
		j.f.annotate("warning", "ProofGate status not posted", "posting the "+modeNoun(j.statusMode)+" failed: "+err.Error())
	default:
		j.res.StatusPosted = state
		j.f.logf("proofgate: %s %s on %s: %s", modeNoun(j.statusMode), state, short(sha), ClipDescription(desc))
	}
}

// reportFinal posts the status of the run's final state.
func (j *job) reportFinal(ctx context.Context) {
	waiting := ""
	if j.c != nil {
		waiting = WaitingFor(j.c.Approval)
	}
	if d := j.res.Decision; d != nil && d.Rules != nil {
		if p := d.Rules.Pending(); p != "" {
			waiting = p
		}
	}
	st, desc := StatusFor(j.res.State, waiting)
	if j.res.State == replay.Complete && j.res.Code != ExitOK {
		st, desc = StatusError, "COMPLETE, but the bundle was not published: see the job summary"
	}
	j.report(ctx, st, desc)
}
