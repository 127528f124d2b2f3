// Package jobsummary holds the markdown a job writes to its job summary
// (GITHUB_STEP_SUMMARY): a run's checks, outputs and approval; markdown
// cells escaped for untrusted text (Cell, Code). It also holds the job
// log's view of a run's checks (Checks): each check's output in a group
// and an error annotation for each check that did not pass.
package jobsummary

import (
	"fmt"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Run is what the job summary of `proofgate action` shows; a job collects
// it on whatever path it takes and writes Markdown once, at the end.
type Run struct {
	Repo         string
	Event        *event.Context
	Origin       string // where the contract was read from
	Contract     *contract.Resolved
	Report       *replay.Report
	Decision     *review.Decision
	Notes        []string // markdown, each a quoted paragraph
	Pending      string
	Failure      string
	Export       *bundle.ExportResult
	BundleSHA256 string
	Signer       string // keyless: the certificate's identity
	ArtifactName string
	ArtifactID   int64
}

// Markdown is the job summary of s.
func (s Run) Markdown() string {
	var b strings.Builder
	state := "not planned"
	if s.Report != nil {
		state = string(s.Report.State)
	}
	fmt.Fprintf(&b, "## ProofGate: %s\n\n", state)
	if s.Failure != "" {
		fmt.Fprintf(&b, "> **Error:** %s\n\n", Cell(s.Failure))
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "> %s\n\n", n)
	}
	s.renderRun(&b)
	s.renderApproval(&b)
	if s.Pending != "" {
		fmt.Fprintf(&b, "\n**Pending:** %s\n", Cell(s.Pending))
	}
	if x := s.Export; x != nil {
		b.WriteString("\n### Evidence\n\n")
		fmt.Fprintf(&b, "Bundle %s, %d files, %d bytes, signed by key %s at %s.\n", Code(s.BundleSHA256), x.Files, x.Size, Code(x.KeyID), x.SignedAt.UTC().Format(time.RFC3339))
		if s.Signer != "" {
			fmt.Fprintf(&b, "Keyless: the key's certificate names %s.\n", Code(s.Signer))
		}
		if s.ArtifactID != 0 {
			fmt.Fprintf(&b, "Uploaded as artifact %s (id %d).\n", Code(s.ArtifactName), s.ArtifactID)
		}
	}
	return b.String()
}

// renderRun writes the run's table and its checks.
func (s Run) renderRun(b *strings.Builder) {
	if s.Report != nil {
		rep := s.Report
		fmt.Fprintf(b, "| | |\n|---|---|\n")
		fmt.Fprintf(b, "| run | %s |\n", Code(rep.RunID))
		fmt.Fprintf(b, "| repository | %s |\n", Code(s.Repo))
		fmt.Fprintf(b, "| tested commit | %s (tree %s) |\n", Code(rep.Source.Commit), Code(rep.Source.Tree))
		if e := s.Event; e != nil && e.PR != 0 {
			fmt.Fprintf(b, "| pull request | #%d, head %s, base %s |\n", e.PR, Code(e.HeadSHA), Code(e.BaseSHA))
		}
		fmt.Fprintf(b, "| contract | %s from %s |\n", Code(rep.ContractHash), Code(s.Origin))
		if rep.Profile != "" {
			fmt.Fprintf(b, "| profile | %s |\n", Code(rep.Profile))
		}
		if rep.VerificationDigest != "" {
			fmt.Fprintf(b, "| verification digest | %s |\n", Code(rep.VerificationDigest))
		}
		b.WriteString("\n### Checks\n\n| check | outcome | exit | duration | stdout | stderr | runtime | image |\n|---|---|---|---|---|---|---|---|\n")
		for _, c := range rep.Checks {
			rt, img := "—", "—"
			if a := c.Attestation; a != nil {
				rt = a.Provider
				if !a.Sandboxed {
					rt += " (unsandboxed)"
				}
				if a.ImageID != "" {
					img = Code(a.ImageID)
				}
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", Code(c.ID), outcome(c.Outcome), c.ExitCode,
				dur(c.DurationMS), size(c.Stdout), size(c.Stderr), Cell(rt), img)
		}
	}
}

// renderApproval writes the approval rule, the review state and the
// recorded decisions.
func (s Run) renderApproval(b *strings.Builder) {
	if s.Contract != nil && s.Report != nil && (s.Report.State == replay.AwaitingApproval || s.Decision != nil || len(s.Report.Decisions) > 0) {
		a := s.Contract.Approval
		b.WriteString("\n### Approval\n\n")
		who := "authors of the pull request and of its commits excluded"
		if a.AllowCommitAuthors {
			who = "the pull request author excluded"
		}
		fmt.Fprintf(b, "Requires %d approving review(s) of the pull request head from a reviewer with role %s (%s; bots never count).\n\n",
			a.Required, strings.Join(a.Roles, ", "), who)
		if d := s.Decision; d != nil {
			b.WriteString("| reviewer | state | commit | counted |\n|---|---|---|---|\n")
			for _, c := range d.Counted {
				fmt.Fprintf(b, "| %s | APPROVED | %s | yes (%s) |\n", Cell(c.Login), Code(event.ShortSHA(c.Commit)), Cell(c.Permission))
			}
			for _, x := range d.Blocking {
				fmt.Fprintf(b, "| %s | CHANGES_REQUESTED | %s | blocks until %s approves or the review is dismissed |\n", Cell(x.Login), Code(event.ShortSHA(x.Commit)), Cell(x.Login))
			}
			for _, x := range d.Ignored {
				fmt.Fprintf(b, "| %s | %s | %s | no: %s |\n", Cell(x.Login), Cell(x.State), Code(event.ShortSHA(x.Commit)), Cell(x.Why))
			}
			if len(d.Counted)+len(d.Blocking)+len(d.Ignored) == 0 {
				b.WriteString("| — | no reviews yet | | |\n")
			}
			fmt.Fprintf(b, "\n%s\n", Cell(d.Summary))
		}
		if len(s.Report.Decisions) > 0 {
			b.WriteString("\nRecorded in the run's event log:\n\n")
			for _, d := range s.Report.Decisions {
				line := fmt.Sprintf("- %s by %s at %s", d.Decision, Cell(d.Actor), Cell(d.Time))
				if g := d.GitHub; g != nil {
					line += fmt.Sprintf(" (review %d, user id %d, commit %s, permission %s)", g.ReviewID, g.UserID, Code(event.ShortSHA(g.Commit)), Cell(g.Permission))
				}
				b.WriteString(line + "\n")
			}
		}
	}
}

func outcome(o runtime.Outcome) string {
	if o == runtime.Passed {
		return "✅ passed"
	}
	return "❌ " + string(o)
}

func size(s *runtime.Stream) string {
	if s == nil {
		return "0 B"
	}
	t := ""
	if s.Truncated {
		t = " (truncated)"
	}
	switch {
	case s.Size >= 1<<20:
		return fmt.Sprintf("%.1f MiB%s", float64(s.Size)/(1<<20), t)
	case s.Size >= 1<<10:
		return fmt.Sprintf("%.1f KiB%s", float64(s.Size)/(1<<10), t)
	}
	return fmt.Sprintf("%d B%s", s.Size, t)
}

func dur(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}
