package jobsummary

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// maxLogBytes bounds how much of each captured stream is echoed to the job
// log (the whole stream is in the run's evidence and the bundle).
const maxLogBytes = 64 << 10

// Log is the job log Checks writes to.
type Log interface {
	Group(title string)
	EndGroup()
	Logf(format string, args ...any)
	// Verbatim prints untrusted text with workflow commands disabled.
	Verbatim(text string)
	// Annotate writes an annotation of level ("error") with a title.
	Annotate(level, title, msg string)
}

// Checks prints each check of the run in runDir (rep is its replay) in a
// group with its output and detail, and an error annotation for each check
// that did not pass.
func Checks(l Log, runDir string, rep *replay.Report) {
	store := blob.New(filepath.Join(runDir, run.BlobDir))
	for _, c := range rep.Checks {
		l.Group(fmt.Sprintf("check %s: %s (exit %d, %s)", c.ID, c.Outcome, c.ExitCode, dur(c.DurationMS)))
		for _, st := range []struct {
			name string
			s    *runtime.Stream
		}{{"stdout", c.Stdout}, {"stderr", c.Stderr}} {
			if st.s == nil || st.s.Size == 0 {
				continue
			}
			l.Logf("--- %s (%d bytes%s, %s)", st.name, st.s.Size, truncNote(st.s.Truncated), st.s.Digest)
			l.Verbatim(readBlob(store, st.s.Digest, maxLogBytes))
		}
		if c.Detail != "" {
			l.Logf("--- detail")
			l.Verbatim(c.Detail)
		}
		l.EndGroup()
		if c.Outcome != runtime.Passed {
			msg := fmt.Sprintf("check %s: %s, exit code %d", c.ID, c.Outcome, c.ExitCode)
			if c.Detail != "" {
				msg += ": " + c.Detail
			}
			l.Annotate("error", "ProofGate check "+c.ID+" "+string(c.Outcome), msg)
		}
	}
}

func truncNote(t bool) string {
	if t {
		return ", truncated at the output limit"
	}
	return ""
}

// readBlob is the first max bytes of blob digest, with a note when there
// is more, or why it cannot be read.
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
