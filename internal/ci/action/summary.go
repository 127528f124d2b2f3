package action

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// MaxLogBytes bounds how much of each captured stream is echoed to the job
// log (the whole stream is in the run's evidence and the bundle).
const MaxLogBytes = 64 << 10

// showChecks prints each check's output in a ::group:: and an ::error
// annotation for each check that did not pass.
func showChecks(f *workflow, runDir string, rep *replay.Report) {
	store := blob.New(filepath.Join(runDir, run.BlobDir))
	for _, c := range rep.Checks {
		f.group(fmt.Sprintf("check %s: %s (exit %d, %s)", c.ID, c.Outcome, c.ExitCode, dur(c.DurationMS)))
		for _, st := range []struct {
			name string
			s    *runtime.Stream
		}{{"stdout", c.Stdout}, {"stderr", c.Stderr}} {
			if st.s == nil || st.s.Size == 0 {
				continue
			}
			f.logf("--- %s (%d bytes%s, %s)", st.name, st.s.Size, truncNote(st.s.Truncated), st.s.Digest)
			f.verbatim(readBlob(store, st.s.Digest, MaxLogBytes))
		}
		if c.Detail != "" {
			f.logf("--- detail")
			f.verbatim(c.Detail)
		}
		f.endGroup()
		if c.Outcome != runtime.Passed {
			msg := fmt.Sprintf("check %s: %s, exit code %d", c.ID, c.Outcome, c.ExitCode)
			if c.Detail != "" {
				msg += ": " + c.Detail
			}
			f.annotate("error", "ProofGate check "+c.ID+" "+string(c.Outcome), msg)
		}
	}
}

func truncNote(t bool) string {
	if t {
		return ", truncated at the output limit"
	}
	return ""
}

func readBlob(s *blob.Store, digest string, max int64) string {
	fh, err := s.Open(digest)
	if err != nil {
		return fmt.Sprintf("(output unavailable: %v)", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return fmt.Sprintf("(output unreadable: %v)", err)
	}
	if int64(len(b)) > max {
		return string(b[:max]) + fmt.Sprintf("\n(… %d bytes shown; the full stream is in the evidence bundle)", max)
	}
	return string(b)
}

func dur(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
}

// summary collects what the job summary shows; render writes it once, at the
// end, whatever path the action took.
type summary struct {
	repo         string
	event        *event.Context
	origin       string
	contract     *contract.Resolved
	report       *replay.Report
	decision     *review.Decision
	notes        []string
	pending      string
	failure      string
	export       *bundle.ExportResult
	bundleSHA256 string
	signer       string // keyless: the certificate's identity
	artifactName string
	artifactID   int64
}

// cell makes untrusted text safe inside a markdown table cell.
// maxCell bounds the runes of untrusted text in one summary cell.
const maxCell = 300

// cell makes untrusted text inert in Markdown, in a table cell or a line:
// control and format characters are escaped (printable.Escape, so no
// newline or terminal escape survives), HTML's <, > and & become entities,
// and every ASCII punctuation character Markdown could read as syntax is
// backslash-escaped: no link, image, emphasis, heading, autolink or table
// break can come from it. Long text is clipped.
func cell(s string) string {
	var b strings.Builder
	for _, r := range clipRunes(printable.Escape(s), maxCell) {
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r < 0x80 && strings.ContainsRune(markdownPunct, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdownPunct is the ASCII punctuation CommonMark lets a backslash
// escape and that GitHub's Markdown can give meaning to.
const markdownPunct = "\\`*_{}[]()#+-.!|~:@\"'$%=^"

// code shows untrusted text as a code span in a table cell: escaped as
// printable text, a backtick (which would end the span) shown as ', and
// | as \| (GitHub splits table cells on it even inside code).
func code(s string) string {
	if s == "" {
		return "—"
	}
	s = strings.NewReplacer("`", "'", "|", "\\|").Replace(clipRunes(printable.Escape(s), maxCell))
	return "`" + s + "`"
}

func clipRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

func (s *summary) render() string {
	var b strings.Builder
	state := "not planned"
	if s.report != nil {
		state = string(s.report.State)
	}
	fmt.Fprintf(&b, "## ProofGate: %s\n\n", state)
	if s.failure != "" {
		fmt.Fprintf(&b, "> **Error:** %s\n\n", cell(s.failure))
	}
	for _, n := range s.notes {
		fmt.Fprintf(&b, "> %s\n\n", n)
	}
	s.renderRun(&b)
	s.renderApproval(&b)
	if s.pending != "" {
		fmt.Fprintf(&b, "\n**Pending:** %s\n", cell(s.pending))
	}
	if x := s.export; x != nil {
		b.WriteString("\n### Evidence\n\n")
		fmt.Fprintf(&b, "Bundle %s, %d files, %d bytes, signed by key %s at %s.\n", code(s.bundleSHA256), x.Files, x.Size, code(x.KeyID), x.SignedAt.UTC().Format(time.RFC3339))
		if s.signer != "" {
			fmt.Fprintf(&b, "Keyless: the key's certificate names %s.\n", code(s.signer))
		}
		if s.artifactID != 0 {
			fmt.Fprintf(&b, "Uploaded as artifact %s (id %d).\n", code(s.artifactName), s.artifactID)
		}
	}
	return b.String()
}

// renderRun writes the run's table and its checks.
func (s *summary) renderRun(b *strings.Builder) {
	if s.report != nil {
		rep := s.report
		fmt.Fprintf(b, "| | |\n|---|---|\n")
		fmt.Fprintf(b, "| run | %s |\n", code(rep.RunID))
		fmt.Fprintf(b, "| repository | %s |\n", code(s.repo))
		fmt.Fprintf(b, "| tested commit | %s (tree %s) |\n", code(rep.Source.Commit), code(rep.Source.Tree))
		if e := s.event; e != nil && e.PR != 0 {
			fmt.Fprintf(b, "| pull request | #%d, head %s, base %s |\n", e.PR, code(e.HeadSHA), code(e.BaseSHA))
		}
		fmt.Fprintf(b, "| contract | %s from %s |\n", code(rep.ContractHash), code(s.origin))
		if rep.Profile != "" {
			fmt.Fprintf(b, "| profile | %s |\n", code(rep.Profile))
		}
		if rep.VerificationDigest != "" {
			fmt.Fprintf(b, "| verification digest | %s |\n", code(rep.VerificationDigest))
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
					img = code(a.ImageID)
				}
			}
			fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", code(c.ID), outcome(c.Outcome), c.ExitCode,
				dur(c.DurationMS), size(c.Stdout), size(c.Stderr), cell(rt), img)
		}
	}
}

// renderApproval writes the approval rule, the review state and the
// recorded decisions.
func (s *summary) renderApproval(b *strings.Builder) {
	if s.contract != nil && s.report != nil && (s.report.State == replay.AwaitingApproval || s.decision != nil || len(s.report.Decisions) > 0) {
		a := s.contract.Approval
		b.WriteString("\n### Approval\n\n")
		who := "authors of the pull request and of its commits excluded"
		if a.AllowCommitAuthors {
			who = "the pull request author excluded"
		}
		fmt.Fprintf(b, "Requires %d approving review(s) of the pull request head from a reviewer with role %s (%s; bots never count).\n\n",
			a.Required, strings.Join(a.Roles, ", "), who)
		if d := s.decision; d != nil {
			b.WriteString("| reviewer | state | commit | counted |\n|---|---|---|---|\n")
			for _, c := range d.Counted {
				fmt.Fprintf(b, "| %s | APPROVED | %s | yes (%s) |\n", cell(c.Login), code(short(c.Commit)), cell(c.Permission))
			}
			for _, x := range d.Blocking {
				fmt.Fprintf(b, "| %s | CHANGES_REQUESTED | %s | blocks until %s approves or the review is dismissed |\n", cell(x.Login), code(short(x.Commit)), cell(x.Login))
			}
			for _, x := range d.Ignored {
				fmt.Fprintf(b, "| %s | %s | %s | no: %s |\n", cell(x.Login), cell(x.State), code(short(x.Commit)), cell(x.Why))
			}
			if len(d.Counted)+len(d.Blocking)+len(d.Ignored) == 0 {
				b.WriteString("| — | no reviews yet | | |\n")
			}
			fmt.Fprintf(b, "\n%s\n", cell(d.Summary))
		}
		if len(s.report.Decisions) > 0 {
			b.WriteString("\nRecorded in the run's event log:\n\n")
			for _, d := range s.report.Decisions {
				line := fmt.Sprintf("- %s by %s at %s", d.Decision, cell(d.Actor), cell(d.Time))
				if g := d.GitHub; g != nil {
					line += fmt.Sprintf(" (review %d, user id %d, commit %s, permission %s)", g.ReviewID, g.UserID, code(short(g.Commit)), cell(g.Permission))
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
