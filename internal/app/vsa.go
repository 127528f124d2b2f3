package app

import (
	"context"
	"errors"
	"os"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/durable"
)

// SummaryOptions say how to sign and where to write a verification
// summary (VSA) and its policy document.
type SummaryOptions struct {
	// Key signs with the gate's key; Keyless (set instead) with an
	// ephemeral key Fulcio certifies.
	Key     vsa.Signer
	Keyless envelope.MaterialSigner
	// Out is the summary's file; Policy its policy document's ("" = none).
	Out, Policy string
	// Replace replaces existing files; without it an existing one is
	// refused (fs.ErrExist) and left as it was.
	Replace bool
}

// SummaryFileError is a summary or policy document file that could not be
// written.
type SummaryFileError struct {
	Path string
	Err  error
}

func (e *SummaryFileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *SummaryFileError) Unwrap() error { return e.Err }

// WriteSummary signs the summary st and writes it, and its policy
// document doc, as o says: the document first, removed again when the
// summary cannot be written, so that neither is left without the other.
// It returns who signed: the key's id, or the keyless signer's.
func WriteSummary(ctx context.Context, st *vsa.Statement, doc []byte, o SummaryOptions) (string, error) {
	var b []byte
	var err error
	signedBy := ""
	switch {
	case (o.Key == nil) == (o.Keyless == nil):
		return "", errors.New("write summary: exactly one of a key and a keyless signer")
	case o.Keyless != nil:
		b, err = vsa.SignKeyless(ctx, o.Keyless, st)
		signedBy = "a keyless certificate for " + o.Keyless.KeyID()
	default:
		b, err = vsa.Sign(ctx, o.Key, st)
		signedBy = o.Key.KeyID()
	}
	if err != nil {
		return "", err
	}
	write := durable.CreateExclusive
	if o.Replace {
		write = durable.WriteFile
	}
	if o.Policy != "" {
		if err := write(o.Policy, doc, 0o644); err != nil {
			return "", &SummaryFileError{o.Policy, err}
		}
	}
	if err := write(o.Out, b, 0o644); err != nil {
		if o.Policy != "" {
			os.Remove(o.Policy) // no policy document without its summary
		}
		return "", &SummaryFileError{o.Out, err}
	}
	return signedBy, nil
}
