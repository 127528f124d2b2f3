package main

import (
	"io"

	"github.com/proofgate/proofgate/internal/app"
)

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
