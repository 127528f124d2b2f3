package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/run"
)

// ExportOptions say what to export, where, and with which signer.
type ExportOptions struct {
	// RunDir is the run's directory (an archived run's extraction).
	RunDir string
	// Out is the bundle file; Sigstore is its companion Sigstore bundle
	// (SigstoreName(Out) when empty).
	Out, Sigstore string
	// Key signs with a key; Keyless (set instead) with an ephemeral key
	// Fulcio certifies, and the archive carries the verification material.
	Key     envelope.Signer
	Keyless envelope.MaterialSigner
	// Products, when set, is a directory the run's products are written
	// under, each at its path, re-hashed from the run's blob store.
	Products string
	// Bundle adjusts the bundle: the signing time, whether existing output
	// files may be replaced (Replace, for every file Export writes), and
	// the opener of an implementation run.
	Bundle bundle.ExportOptions
}

// Exported is a written bundle: what bundle.Export reports, and the
// companion Sigstore bundle's bytes and path.
type Exported struct {
	*bundle.ExportResult
	Sigstore     []byte
	SigstorePath string
}

// Export writes the signed evidence bundle of the COMPLETE run in o.RunDir
// to o.Out, then its companion Sigstore bundle (for a keyless bundle its
// attestation.sigstore.json member, byte for byte; for a key-signed one
// the bundle sigstore.FromEnvelope makes of its envelope), then the
// products when asked. The archive is refused before anything is written
// when the companion's path is the archive's, or exists (fs.ErrExist)
// without Bundle.Replace. A run that may not be exported is a
// *bundle.ExportError (exit.Refused).
func Export(o ExportOptions) (*Exported, error) {
	if o.Sigstore == "" {
		o.Sigstore = SigstoreName(o.Out)
	}
	if filepath.Clean(o.Out) == filepath.Clean(o.Sigstore) {
		return nil, fmt.Errorf("%s: the companion Sigstore bundle would replace the archive", o.Sigstore)
	}
	if _, err := os.Lstat(o.Sigstore); err == nil && !o.Bundle.Replace {
		return nil, fmt.Errorf("%s: %w", o.Sigstore, fs.ErrExist)
	}
	res, err := exportFile(o)
	if err != nil {
		return nil, err
	}
	comp := res.Material
	if comp == nil {
		if comp, err = sigstore.FromEnvelope(res.Envelope, res.KeyID); err != nil {
			return nil, err
		}
	}
	if err := sigstore.WriteFile(o.Sigstore, comp, o.Bundle.Replace); err != nil {
		return nil, err
	}
	if o.Products != "" {
		if err := run.WriteProducts(o.RunDir, o.Products, bundle.ProductRecords(res.Products), o.Bundle.Replace); err != nil {
			return nil, &ProductsError{Dir: o.Products, Err: err}
		}
	}
	return &Exported{ExportResult: res, Sigstore: comp, SigstorePath: o.Sigstore}, nil
}

// exportFile writes the archive with the one signer o names.
func exportFile(o ExportOptions) (*bundle.ExportResult, error) {
	switch {
	case (o.Key == nil) == (o.Keyless == nil):
		return nil, errors.New("export: exactly one of a key and a keyless signer")
	case o.Keyless != nil:
		return bundle.ExportFileWith(o.RunDir, o.Out, o.Keyless, o.Bundle)
	}
	return bundle.ExportFile(o.RunDir, o.Out, o.Key, o.Bundle)
}

// ProductsError is a failure to write the products of an exported run.
type ProductsError struct {
	Dir string
	Err error
}

func (e *ProductsError) Error() string { return fmt.Sprintf("products %s: %v", e.Dir, e.Err) }
func (e *ProductsError) Unwrap() error { return e.Err }

// SigstoreName is the companion Sigstore bundle's path beside the archive
// out: out without .tar.gz (or .tgz), plus .sigstore.json.
func SigstoreName(out string) string {
	for _, ext := range []string{".tar.gz", ".tgz"} {
		if strings.HasSuffix(out, ext) {
			return strings.TrimSuffix(out, ext) + ".sigstore.json"
		}
	}
	return out + ".sigstore.json"
}

// IgnoredDir creates dir, with a .gitignore that ignores everything in it
// (as .pytest_cache does) headed by the comment why: what proofgate writes
// there leaves git status, and so the work-tree digest the next run binds,
// unchanged. An existing .gitignore is left as it is.
func IgnoredDir(dir, why string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := durable.CreateExclusive(filepath.Join(dir, ".gitignore"), []byte("# "+why+"\n*\n"), 0o644)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
