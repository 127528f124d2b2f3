package jobsummary

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"alice":                   "alice",
		"[x](https://e.example)":  `\[x\]\(https\://e\.example\)`,
		"<img src=x> & |":         `&lt;img src\=x&gt; &amp; \|`,
		"a\nb\x1b[2J":             `a\\nb\\x1b\[2J`,
		"# h *e* _m_ `c` ~s~ @me": `\# h \*e\* \_m\_ \` + "`" + `c\` + "`" + ` \~s\~ \@me`,
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Cell(strings.Repeat("é", maxCell+5)); got != strings.Repeat("é", maxCell)+"…" {
		t.Errorf("long text not clipped at %d runes: %d runes", maxCell, len([]rune(got)))
	}
}

func TestCode(t *testing.T) {
	for in, want := range map[string]string{
		"":           "—",
		"sha256:ab":  "`sha256:ab`",
		"a`b|c":      "`a'b\\|c`",
		"line\nnext": "`line\\nnext`",
	} {
		if got := Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClipRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "abc…"}, {"ééé", 2, "éé…"}, {"", 0, ""}} {
		if got := clipRunes(tc.in, tc.n); got != tc.want {
			t.Errorf("clipRunes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// logRecord records what Checks writes.
type logRecord struct{ lines []string }

func (l *logRecord) Group(title string) { l.lines = append(l.lines, "group "+title) }
func (l *logRecord) EndGroup()          { l.lines = append(l.lines, "endgroup") }
func (l *logRecord) Logf(format string, args ...any) {
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}
func (l *logRecord) Verbatim(text string) { l.lines = append(l.lines, "verbatim "+text) }
func (l *logRecord) Annotate(level, title, msg string) {
	l.lines = append(l.lines, level+" "+title+": "+msg)
}

// Checks groups each check's output and detail and annotates a check that
// did not pass; a stream whose blob is missing says so.
func TestChecks(t *testing.T) {
	var l logRecord
	rep := &replay.Report{Checks: []replay.CheckReport{
		{ID: "ok", Outcome: runtime.Passed, DurationMS: 1500},
		{ID: "unit", Outcome: runtime.Failed, ExitCode: 2, Detail: "boom",
			Stdout: &runtime.Stream{Size: 3, Truncated: true, Digest: "sha256:" + strings.Repeat("0", 64)}},
	}}
	Checks(&l, t.TempDir(), rep)
	got := strings.Join(l.lines, "\n")
	for _, want := range []string{
		"group check ok: passed (exit 0, 1.5s)\nendgroup\n",
		"group check unit: failed (exit 2, 0s)\n--- stdout (3 bytes, truncated at the output limit, sha256:",
		"verbatim (output unavailable: ",
		"--- detail\nverbatim boom\nendgroup\nerror ProofGate check unit failed: check unit: failed, exit code 2: boom",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}
