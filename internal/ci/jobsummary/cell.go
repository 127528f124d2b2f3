package jobsummary

import (
	"strings"

	"github.com/proofgate/proofgate/internal/printable"
)

// maxCell bounds the runes of untrusted text in one summary cell.
const maxCell = 300

// Cell makes untrusted text inert in Markdown, in a table cell or a line:
// control and format characters are escaped (printable.Escape, so no
// newline or terminal escape survives), HTML's <, > and & become entities,
// and every ASCII punctuation character Markdown could read as syntax is
// backslash-escaped: no link, image, emphasis, heading, autolink or table
// break can come from it. Long text is clipped.
func Cell(s string) string {
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

// Code shows untrusted text as a code span in a table cell: escaped as
// printable text, a backtick (which would end the span) shown as ', and
// | as \| (GitHub splits table cells on it even inside code). Empty text
// is "—".
func Code(s string) string {
	if s == "" {
		return "—"
	}
	s = strings.NewReplacer("`", "'", "|", "\\|").Replace(clipRunes(printable.Escape(s), maxCell))
	return "`" + s + "`"
}

// clipRunes is s cut to its first n runes and "…" when longer.
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
