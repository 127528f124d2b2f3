package bundle

// This file is a placeholder for the keyless export and verify API
// (API.md, "bundle") that the helper "integ" implements; it exists only so
// that code written against that API compiles. It is deleted at merge.

import (
	"errors"
	"io"

	"github.com/proofgate/proofgate/bundle/envelope"
)

// ExportWith is not implemented in this placeholder.
func ExportWith(runDir string, s envelope.MaterialSigner, w io.Writer, opts ExportOptions) (*ExportResult, error) {
	return nil, errors.New("not implemented")
}

// ExportFileWith is not implemented in this placeholder.
func ExportFileWith(runDir, outPath string, s envelope.MaterialSigner, opts ExportOptions) (*ExportResult, error) {
	return nil, errors.New("not implemented")
}

// WithMaterialVerifiers is not implemented in this placeholder: it
// ignores mv.
func WithMaterialVerifiers(mv envelope.MaterialVerifiers) VerifierOption {
	return func(*Verifier) {}
}
