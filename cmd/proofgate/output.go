package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
)

func outputCmd(g *globals) *cobra.Command {
	var stream string
	var asJSON bool
	c := &cobra.Command{
		Use:   "output RUN CHECK [--stream stdout|stderr]",
		Short: "Print a check's captured output, verified against its recorded digest",
		Long: `Print what a check wrote in RUN, after checking each evidence blob against
the digest the event log recorded: by default its stderr then its stdout, each
under a line "--- stderr of check CHECK (N bytes) ---" (or "... : empty ---"
for a stream it did not write to); with --stream stdout or --stream stderr that
one stream alone, byte for byte, for scripts. CHECK is a check id from
'proofgate status RUN'. With --json, one document for stdout (or the --stream
named): run_id, check, stream, digest, size, truncated, encoding ("utf-8", or
"base64" when the bytes are not valid UTF-8) and content; without --stream it
also holds "stderr", the same members for the stderr stream.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if stream != "" && stream != "stdout" && stream != "stderr" {
				return usageErr(fmt.Errorf("--stream must be stdout or stderr, not %q", stream))
			}
			o, err := app.OpenOutput(g.state, args[0], args[1])
			if err != nil {
				return classify(err)
			}
			defer o.Close()
			switch {
			case asJSON:
				return outputJSON(g.stdout, o, stream)
			case stream == "":
				return printStreams(g.stdout, o)
			}
			s, err := o.Stream(stream)
			if err != nil {
				return classify(err)
			}
			return o.Copy(g.stdout, s)
		},
	}
	c.Flags().StringVar(&stream, "stream", "", "print only this stream, byte for byte: stdout or stderr (default both, labelled)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: the stream's digest, size and content (UTF-8 text, else base64)")
	return c
}

// printStreams prints the check's stderr then its stdout, each under a
// line naming it, or a line saying it is empty.
func printStreams(w io.Writer, o *app.Output) error {
	for _, name := range []string{"stderr", "stdout"} {
		s, _ := o.Stream(name)
		if s == nil || s.Size == 0 {
			fmt.Fprintf(w, "--- %s of check %s: empty ---\n", name, esc(o.Check.ID))
			continue
		}
		note := ""
		if s.Truncated {
			note = ", truncated at the output limit"
		}
		fmt.Fprintf(w, "--- %s of check %s (%d bytes%s) ---\n", name, esc(o.Check.ID), s.Size, note)
		tw := &tailWatcher{w: w}
		if err := o.Copy(tw, s); err != nil {
			return err
		}
		if tw.last != '\n' {
			fmt.Fprintln(w)
		}
	}
	return nil
}

// tailWatcher remembers the last byte written through it.
type tailWatcher struct {
	w    io.Writer
	last byte
}

func (t *tailWatcher) Write(p []byte) (int, error) {
	if len(p) > 0 {
		t.last = p[len(p)-1]
	}
	return t.w.Write(p)
}

// outputJSON prints the document for the check's stream (stdout when none
// is named, then with the stderr document as member "stderr").
func outputJSON(w io.Writer, o *app.Output, stream string) error {
	name := stream
	if name == "" {
		name = "stdout"
	}
	d, err := o.Doc(name)
	if err != nil {
		return classify(err)
	}
	if stream == "" && o.Check.Stderr != nil {
		if d.Stderr, err = o.Doc("stderr"); err != nil {
			return classify(err)
		}
	}
	return writeJSON(w, d)
}
