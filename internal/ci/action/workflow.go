package action

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/proofgate/proofgate/internal/printable"
	"github.com/sethvargo/go-githubactions"
)

// workflow wraps go-githubactions with the guards a local run needs: its
// file commands (outputs, job summary) panic when GITHUB_OUTPUT or
// GITHUB_STEP_SUMMARY is unset, so outputs then go to the log instead.
type workflow struct {
	a      *githubactions.Action
	getenv func(string) string
	w      io.Writer
	// outputs records what was set, for callers and tests.
	outputs map[string]string
	errs    []error
}

func newWorkflow(getenv func(string) string, w io.Writer) *workflow {
	return &workflow{
		a:       githubactions.New(githubactions.WithGetenv(getenv), githubactions.WithWriter(w)),
		getenv:  getenv,
		w:       w,
		outputs: map[string]string{},
	}
}

func (f *workflow) input(name string) string { return f.a.GetInput(name) }

func (f *workflow) logf(format string, args ...any) {
	fmt.Fprintf(f.w, format+"\n", args...)
}

// mask registers a secret with the runner's log masker. Multi-line values
// (PEM keys) are masked line by line as well, since the runner matches
// within single log lines.
func (f *workflow) mask(secret string) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return
	}
	f.a.AddMask(secret)
	if strings.ContainsAny(secret, "\r\n") {
		for _, l := range strings.FieldsFunc(secret, func(r rune) bool { return r == '\n' || r == '\r' }) {
			l = strings.TrimSpace(l)
			// PEM armour lines are not secret, and masking them would
			// garble unrelated log lines.
			if len(l) >= 8 && !strings.HasPrefix(l, "-----") {
				f.a.AddMask(l)
			}
		}
	}
}

// output sets a step output, or logs it when GITHUB_OUTPUT is unset.
func (f *workflow) output(k, v string) {
	f.outputs[k] = v
	if f.getenv("GITHUB_OUTPUT") == "" {
		f.logf("output %s=%s", k, v)
		return
	}
	f.guard(func() { f.a.SetOutput(k, v) })
}

// summary appends markdown to the job summary, if there is one.
func (f *workflow) summary(md string) {
	if f.getenv("GITHUB_STEP_SUMMARY") == "" {
		return
	}
	f.guard(func() { f.a.AddStepSummary(md) })
}

// guard turns a panic of a file command (unwritable file) into a recorded
// error instead of crashing the action after the checks ran.
func (f *workflow) guard(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("workflow file command: %v", r)
			f.errs = append(f.errs, err)
			f.logf("warning: %v", err)
		}
	}()
	fn()
}

// annotate writes an ::error, ::warning or ::notice annotation with a title.
// Title and message may carry untrusted text (check details, logins,
// refusal details): they are escaped as printable text first, so no
// terminal escape or line break reaches the log or the annotation.
func (f *workflow) annotate(level, title, msg string) {
	title, msg = printable.Escape(title), printable.Escape(msg)
	a := f.a
	if title != "" {
		a = a.WithFieldsMap(map[string]string{"title": title})
	}
	switch level {
	case "error":
		a.Errorf("%s", msg)
	case "warning":
		a.Warningf("%s", msg)
	default:
		a.Noticef("%s", msg)
	}
}

// verbatim prints untrusted text (a check's output) to the log with
// workflow commands disabled around it: a check printing "::add-mask::",
// "::endgroup::" or "::error::" cannot talk to the runner. The resume token
// is random, so the text cannot guess it.
func (f *workflow) verbatim(text string) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	tok := "proofgate-" + hex.EncodeToString(b[:])
	fmt.Fprintf(f.w, "::stop-commands::%s\n", tok)
	io.WriteString(f.w, text)
	if !strings.HasSuffix(text, "\n") {
		io.WriteString(f.w, "\n")
	}
	fmt.Fprintf(f.w, "::%s::\n", tok)
}

func (f *workflow) group(title string) { f.a.Group(title) }
func (f *workflow) endGroup()          { f.a.EndGroup() }
