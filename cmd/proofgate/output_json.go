package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// outputDoc is `proofgate output --json`: a check's captured stream with
// its recorded digest and size. Content is the bytes as UTF-8 text when
// they are valid UTF-8 (Encoding "utf-8"), else base64 (Encoding
// "base64"), so the document round-trips the exact bytes.
type outputDoc struct {
	RunID     string `json:"run_id"`
	Check     string `json:"check"`
	Stream    string `json:"stream"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated"`
	Encoding  string `json:"encoding"`
	Content   string `json:"content"`
	// Stream0 is the recorded stream the document describes.
	Stream0 *runtime.Stream `json:"-"`
}

// writeOutputJSON reads the stream's blob (at most its recorded size, one
// byte more to notice a blob that grew) and prints the document.
func writeOutputJSON(w io.Writer, d outputDoc, r io.Reader) error {
	s := d.Stream0
	b, err := io.ReadAll(io.LimitReader(r, s.Size+1))
	if err != nil {
		return refusedErr(err)
	}
	if int64(len(b)) != s.Size {
		return refusedErr(fmt.Errorf("the %s blob of check %q holds %d bytes, the log recorded %d", d.Stream, d.Check, len(b), s.Size))
	}
	d.Digest, d.Size, d.Truncated = s.Digest, s.Size, s.Truncated
	if utf8.Valid(b) {
		d.Encoding, d.Content = "utf-8", string(b)
	} else {
		d.Encoding, d.Content = "base64", base64.StdEncoding.EncodeToString(b)
	}
	return writeJSON(w, d)
}
