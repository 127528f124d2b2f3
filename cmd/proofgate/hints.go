package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// What the CLI tells a user who is stuck: each error that has an obvious
// next step names it. The hooks in root.go and kernel.go call these.

// usageHint returns msg with the --help of cmd to read appended, when msg
// is a usage error about the command's flags or arguments (it starts with
// a flag, or with "give": "--actor is required", "give exactly one of
// ...") and does not name a --help already. Contract and input errors,
// which name a file and field, are left as they are.
func usageHint(cmd *cobra.Command, msg string) string {
	if cmd == nil || strings.Contains(msg, "--help") {
		return msg
	}
	if strings.HasPrefix(msg, "--") || strings.HasPrefix(msg, "give ") {
		return fmt.Sprintf("%s (see '%s --help')", msg, cmd.CommandPath())
	}
	return msg
}

// wantsJSON reports whether the command line asked for --json: the parsed
// flag when cobra got that far, else the raw arguments (a flag error stops
// parsing before the value is set).
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			return f.Value.String() == "true"
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// watchedWriter remembers whether anything was written to stdout: a
// command that printed its own JSON document gets no second one.
type watchedWriter struct {
	w     io.Writer
	wrote bool
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.wrote = w.wrote || len(p) > 0
	return w.w.Write(p)
}

// jsonError is what a command given --json prints on stdout when it fails
// with an error it has not reported itself: the message (as on stderr) and
// the process exit code.
type jsonError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// reportError prints a failed command's message: on stderr always, and
// with --json also as a jsonError document on stdout.
func reportError(stdout, stderr io.Writer, asJSON bool, msg string, code int) {
	fmt.Fprintln(stderr, "proofgate:", printable.Escape(msg))
	if asJSON {
		writeJSON(stdout, jsonError{Error: msg, ExitCode: code})
	}
}

// runHint adds what to do to a RUN argument that names no run.
func runHint(err error) error {
	var nf *run.NotFoundError
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("%w ('proofgate list' shows the runs; --state names another state directory)", err)
	case errors.Is(err, run.ErrNoRuns):
		return fmt.Errorf("%w: start one with 'proofgate run' (or pass --state DIR where the runs are)", err)
	case errors.Is(err, source.ErrNoCommit):
		return errNoCommit
	}
	return err
}

// errNoCommit replaces git's error for a repository without commits.
var errNoCommit = exit.Sentinel(exit.Usage, "this git repository has no commits yet: a run is bound to a commit, so commit your files first (git add -A && git commit -m init), then run proofgate again")

// approveHint adds the next step to a decision the run's state refuses: a
// STALE run is retried, a BLOCKED one fixed and retried.
func approveHint(err error, id string) error {
	var se *run.StaleError
	var ste *run.StateError
	switch {
	case errors.As(err, &se), errors.As(err, &ste) && ste.State == replay.Stale:
		return fmt.Errorf("%w; the code or contract changed since planning, so this run can no longer be approved: 'proofgate retry %s' starts a new run of the current commit and contract (once 'git status' shows nothing to commit: retry refuses uncommitted changes; 'proofgate status %s' names them)", err, id, id)
	case errors.As(err, &ste) && ste.State == replay.Blocked:
		return fmt.Errorf("%w; a check did not pass: 'proofgate status %s' shows which; fix, commit, then 'proofgate retry %s'", err, id, id)
	}
	return err
}

// printNoRuns says, for list without runs, that there are none and how to
// make one.
func printNoRuns(w io.Writer, state string) {
	fmt.Fprintf(w, "no runs in %s (start one with 'proofgate run')\n", esc(run.NewStore(state).Dir))
}

// identityRE is the form of a key's identity: the repository its bundles
// must be made for, as bundle verify compares it.
var identityRE = regexp.MustCompile(`^repo:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// checkKeyIdentity refuses an --identity that is not repo:OWNER/NAME: any
// other string would never match a bundle, and the key would be useless.
func checkKeyIdentity(id string) error {
	if err := printable.Check("--identity", id); err != nil {
		return usageErr(err)
	}
	if !identityRE.MatchString(id) || strings.Contains(id, "/../") || strings.HasSuffix(id, "/..") {
		return usageErr(fmt.Errorf("--identity %q: want repo:OWNER/NAME, e.g. repo:acme/widget (the repository whose bundles the key may sign)", id))
	}
	return nil
}

// Failed-check summaries show at most this much of the end of each stream.
const (
	tailLines = 10
	tailBytes = 2048
)

// printFailures shows, for each check that did not pass, the last lines
// of each stream it wrote (stdout, then stderr: test runners such as
// pytest, mocha and tape report failures on stdout, compilers and npm on
// stderr) and the command that prints all of it.
func printFailures(g *globals, rep *replay.Report) {
	blobs := blob.New(filepath.Join(run.NewStore(g.state).Path(rep.RunID), run.BlobDir))
	for _, c := range rep.Checks {
		if c.Outcome == runtime.Passed || c.Outcome == runtime.Skipped {
			continue
		}
		var written []string
		for _, s := range []struct {
			name string
			s    *runtime.Stream
		}{{"stdout", c.Stdout}, {"stderr", c.Stderr}} {
			if s.s == nil || s.s.Size == 0 {
				continue
			}
			if len(written) == 0 {
				fmt.Fprintf(g.stdout, "check %s %s; ", esc(c.ID), esc(string(c.Outcome)))
			}
			fmt.Fprintf(g.stdout, "the last lines of its %s:\n", s.name)
			printTail(g.stdout, blobs, s.s)
			written = append(written, s.name)
		}
		switch len(written) {
		case 1:
			fmt.Fprintf(g.stdout, "all of it: %s --stream %s\n", outputCommand(g, rep.RunID, c.ID), written[0])
		case 2:
			fmt.Fprintf(g.stdout, "all of it: %s\n", outputCommand(g, rep.RunID, c.ID))
		}
	}
}

// printTail prints a stream's last lines, escaped, each after "  | ".
func printTail(w io.Writer, blobs *blob.Store, s *runtime.Stream) {
	tail, err := streamTail(blobs, s)
	if err != nil {
		fmt.Fprintf(w, "  (unreadable: %s)\n", esc(err.Error()))
	}
	for _, l := range tail {
		fmt.Fprintf(w, "  | %s\n", esc(l))
	}
}

// outputCommand is the exact command that prints check id's output.
func outputCommand(g *globals, id, check string) string {
	cmd := "proofgate"
	if g.stateGiven {
		cmd += " --state " + shellQuote(g.state)
	}
	return fmt.Sprintf("%s output %s %s", cmd, id, shellQuote(check))
}

// shellQuote quotes s for a POSIX shell when it is not a plain word.
func shellQuote(s string) string { return printable.ShellQuote(s) }

// streamTail returns the last tailLines lines of a stream's blob (at most
// tailBytes), after checking the blob against its recorded digest.
func streamTail(blobs *blob.Store, s *runtime.Stream) ([]string, error) {
	if err := blobs.Verify(s.Digest); err != nil {
		return nil, err
	}
	f, err := blobs.Open(s.Digest)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	off := max(s.Size-tailBytes, 0)
	buf := make([]byte, s.Size-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // the first line is cut
	}
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return lines, nil
}
