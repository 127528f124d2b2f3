package action

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// hostile is text a pull request or a check controls, built to forge
// Markdown: a link, an image, HTML, a table break, a new line with a new
// row, a heading, a terminal escape and a bidirectional override.
const hostile = "alice](https://evil.example/x) ![i](https://evil.example/i.png) <img src=x onerror=alert(1)> | forged | cell |\n| forged | row |\n# heading \x1b[2J \u202e `tick` https://evil.example/auto"

func TestSummaryEscapesUntrustedText(t *testing.T) {
	s := &jobsummary.Run{
		Repo:     "acme/widget",
		Origin:   "git:" + strings.Repeat("a", 40) + ":.proofgate/contract.yaml",
		Contract: &contract.Resolved{Approval: contract.Approval{Required: 1, Roles: []string{"write"}}},
		Failure:  hostile,
		Pending:  hostile,
		Report: &replay.Report{RunID: "r", State: replay.AwaitingApproval, ContractHash: "sha256:x",
			Checks: []replay.CheckReport{{ID: "unit", Outcome: runtime.Failed, Detail: hostile}},
			Decisions: []replay.Decision{{Decision: "approved", Actor: hostile, Time: hostile,
				GitHub: &replay.GitHubReview{Login: hostile, Commit: hostile, Permission: hostile}}}},
		Decision: &review.Decision{Summary: hostile,
			Counted:  []review.Approval{{Login: hostile, Commit: hostile, Permission: hostile}},
			Ignored:  []review.Ignored{{Login: hostile, State: hostile, Commit: hostile, Why: hostile}},
			Blocking: []review.Blocker{{Login: hostile, Commit: hostile}}},
	}
	checkMarkdown(t, "summary", s.Markdown())
	checkMarkdown(t, "verify summary", renderVerify(&VerifyResult{verdict: verdict{Verdict: bundle.VerdictRefused, Reason: hostile, Detail: hostile}, Commit: hostile, Match: hostile,
		Attempts: []gate.Attempt{{Artifact: hostile, Verdict: bundle.VerdictRefused, Reason: hostile, Detail: hostile}}}))
}

func checkMarkdown(t *testing.T, name, md string) {
	t.Helper()
	// Inside a code span nothing but a backtick has meaning (and jobsummary.Code()
	// replaces those): look at the rest, and at the spans for escapes.
	prose := codeSpan.ReplaceAllString(md, "")
	for _, bad := range []string{"](http", "![", "<img", "\n| forged", "\n# heading", "https://evil"} {
		if strings.Contains(prose, bad) {
			t.Errorf("%s holds %q outside code spans:\n%s", name, bad, md)
		}
	}
	for _, bad := range []string{"\x1b", "\u202e", "\r"} {
		if strings.Contains(md, bad) {
			t.Errorf("%s holds %q:\n%s", name, bad, md)
		}
	}
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		// Every row of a table has as many cells as its header: no
		// unescaped | came from the text.
		if n := unescapedPipes(line); n != unescapedPipes(headerOf(md, i)) {
			t.Errorf("%s line %d has %d cell separators, its table header %d: %s", name, i+1, n, unescapedPipes(headerOf(md, i)), line)
		}
	}
}

func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if line[i] == '|' {
			n++
		}
	}
	return n
}

var codeSpan = regexp.MustCompile("`[^`\n]*`")

// headerOf returns the first line of the table holding line i.
func headerOf(md string, i int) string {
	lines := strings.Split(md, "\n")
	for i > 0 && strings.HasPrefix(lines[i-1], "|") {
		i--
	}
	return lines[i]
}

// The job log: annotations carry no terminal escape and no line break.
func TestAnnotationsEscapeUntrustedText(t *testing.T) {
	var log bytes.Buffer
	f := newWorkflow(func(string) string { return "" }, &log)
	f.annotate("error", "ProofGate check "+hostile, hostile)
	out := log.String()
	if strings.Count(out, "\n") != 1 || strings.Contains(out, "\x1b") || strings.Contains(out, "\u202e") {
		t.Fatalf("annotation %q", out)
	}
}
