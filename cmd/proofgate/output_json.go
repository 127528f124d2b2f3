package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/kernel/replay"
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
	// Stderr is the stderr document, beside stdout's when output --json
	// names no --stream.
	Stderr *outputDoc `json:"stderr,omitempty"`
}

// outputJSON prints the document for check c's stream (stdout when none
// is named, then with the stderr document as member "stderr").
func outputJSON(w io.Writer, blobs *blob.Store, id string, c replay.CheckReport, stream string) error {
	name := stream
	if name == "" {
		name = "stdout"
	}
	d, err := streamDoc(blobs, id, c, name)
	if err != nil {
		return err
	}
	if stream == "" && c.Stderr != nil {
		if d.Stderr, err = streamDoc(blobs, id, c, "stderr"); err != nil {
			return err
		}
	}
	return writeJSON(w, d)
}

// streamDoc reads check c's stream name (at most its recorded size, one
// byte more to notice a blob that grew) into a document.
func streamDoc(blobs *blob.Store, id string, c replay.CheckReport, name string) (*outputDoc, error) {
	s, err := recordedStream(c, name)
	if err != nil {
		return nil, err
	}
	f, err := blobs.Open(s.Digest)
	if err != nil {
		return nil, refusedErr(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, s.Size+1))
	if err != nil {
		return nil, refusedErr(err)
	}
	if int64(len(b)) != s.Size {
		return nil, refusedErr(fmt.Errorf("the %s blob of check %q holds %d bytes, the log recorded %d", name, c.ID, len(b), s.Size))
	}
	d := &outputDoc{RunID: id, Check: c.ID, Stream: name, Digest: s.Digest, Size: s.Size, Truncated: s.Truncated}
	if utf8.Valid(b) {
		d.Encoding, d.Content = "utf-8", string(b)
	} else {
		d.Encoding, d.Content = "base64", base64.StdEncoding.EncodeToString(b)
	}
	return d, nil
}
