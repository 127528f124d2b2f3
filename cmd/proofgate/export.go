package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/spf13/cobra"
)

// checkExportOutputs refuses, before anything is written, an archive and a
// Sigstore bundle path that are the same file, either inside the run store,
// or an existing Sigstore bundle without --force (ExportFile checks the
// archive itself).
func (g *globals) checkExportOutputs(out, sigOut string, force bool) error {
	if err := g.checkOutput("-o", out); err != nil {
		return err
	}
	if err := g.checkOutput("--sigstore", sigOut); err != nil {
		return err
	}
	if filepath.Clean(out) == filepath.Clean(sigOut) {
		return usageErr(fmt.Errorf("--sigstore %s: the same file as the archive", sigOut))
	}
	if _, err := os.Lstat(sigOut); err == nil && !force {
		return outputErr(fmt.Errorf("--sigstore %s: %w", sigOut, fs.ErrExist))
	}
	return nil
}

func exportCmd(g *globals) *cobra.Command {
	var keyRef, out, sigOut, signedAt, productsDir string
	var asJSON, force bool
	var kx keylessExportFlags
	c := &cobra.Command{
		Use:   "export RUN (--key key.pem | --keyless [--id-token-file F]) [-o FILE] [--sigstore FILE] [--force]",
		Short: "Export a COMPLETE run as a signed evidence bundle",
		Long: `Write one deterministic .tar.gz holding run.json, events.ndjson,
contract.json, every blob the log references, the latest checkpoint if any,
and attestation.dsse.json: a DSSE envelope over an in-toto Statement v1 whose
subjects are the other files. Only a run that reconciles as COMPLETE exports.
--key is a PKCS#8 PEM file or env:VAR. The signing time defaults to the time
of the run's last event (so the same run and key give the same bytes);
--signed-at T or now overrides it. Beside the archive goes its companion
Sigstore bundle (v0.3, the same DSSE envelope, the key id as public key
hint), FILE without .tar.gz (or .tgz) plus .sigstore.json unless
--sigstore names it. Without -o, FILE is <state>/bundles/<run-id>.bundle.tar.gz
(.proofgate/bundles/ by default): a directory proofgate creates with a
.gitignore of its own, so the export leaves the work tree clean and the next
run is not refused as dirty. An existing FILE is refused unless --force; a FILE inside the run store
(<state>/runs) always is.

--keyless signs with an ephemeral key instead, certified by Fulcio for the OIDC
token (--id-token-file or $SIGSTORE_ID_TOKEN) and timed by a timestamp
authority; the archive then carries attestation.sigstore.json, and the
companion Sigstore bundle is that member (cosign and sigstore-go verify it).

The files a passed check produced (produces: in the contract) are subjects
of the statement as products/<check>/<path>, by their SHA-256, but not
members of the archive: --products DIR writes each to DIR/<path> from the
run's blob store, re-hashed (an existing file is refused unless --force).
"bundle verify --subject FILE" then accepts the bundle only for such a file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, ms, err := kx.signers(cmd.Flags().Changed, keyRef)
			if err != nil {
				return err
			}
			var opts bundle.ExportOptions
			if signedAt != "" {
				if opts.SignedAt, err = parseTime("signed-at", signedAt); err != nil {
					return err
				}
			}
			store := run.NewStore(g.state)
			id, err := store.Resolve(args[0])
			if err != nil {
				return classify(err)
			}
			if out == "" {
				if out, err = defaultBundlePath(g.state, id); err != nil {
					return err
				}
			}
			if sigOut == "" {
				sigOut = app.SigstoreName(out)
			}
			if err := g.checkExportOutputs(out, sigOut, force); err != nil {
				return err
			}
			// An archived run is read from its archive (rd is then an
			// extraction): the implementation run it names is found in
			// the state directory, archived or not.
			opts.Replace, opts.OpenRun = force, runOpener(g.state)
			rd, _, done, err := run.ReadDir(g.state, id)
			if err != nil {
				return classify(err)
			}
			defer done()
			x, err := app.Export(app.ExportOptions{RunDir: rd, Out: out, Sigstore: sigOut, Key: s, Keyless: ms, Products: productsDir, Bundle: opts})
			if err != nil {
				return exportErr(err)
			}
			return g.printExport(asJSON, x.ExportResult, out, sigOut)
		},
	}
	c.Flags().StringVar(&keyRef, "key", "", "private key: PKCS#8 PEM file or env:VAR")
	c.Flags().StringVarP(&out, "output", "o", "", "bundle file (default <state>/bundles/<run-id>.bundle.tar.gz, git-ignored)")
	c.Flags().StringVar(&sigOut, "sigstore", "", "companion Sigstore bundle file (default FILE without .tar.gz or .tgz, plus .sigstore.json)")
	c.Flags().StringVar(&signedAt, "signed-at", "", "signing time to assert (RFC 3339 or now)")
	c.Flags().StringVar(&productsDir, "products", "", "also write the run's products (produces: in the contract) under this directory, each at its path")
	kx.register(c)
	c.Flags().BoolVar(&force, "force", false, "replace an existing output file")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// exportErr classifies a failed export: a run that may not be exported is
// refused; a products directory that could not be filled, or an output,
// is the output's failure.
func exportErr(err error) error {
	var xe *bundle.ExportError
	var pe *app.ProductsError
	switch {
	case errors.As(err, &xe):
		return refusedErr(err)
	case errors.As(err, &pe):
		return outputErr(fmt.Errorf("--products %s: %w", pe.Dir, pe.Err))
	}
	return outputErr(err)
}

// bundleDir is where bundle export writes without -o: beside runs/ in the
// state directory, outside the run store.
const bundleDir = "bundles"

// defaultBundlePath returns <state>/bundles/<id>.bundle.tar.gz, creating
// the directory with a .gitignore that ignores everything in it (as
// .pytest_cache does): a bundle written there leaves git status, and so the
// work-tree digest the next run binds, unchanged. An existing .gitignore is
// left as it is.
func defaultBundlePath(state, id string) (string, error) {
	dir := filepath.Join(state, bundleDir)
	if err := app.IgnoredDir(dir, "written by proofgate bundle export: bundles are not source"); err != nil {
		return "", envErr(fmt.Errorf("bundle directory: %w", err))
	}
	return filepath.Join(dir, id+".bundle.tar.gz"), nil
}

// printExport reports an exported bundle: its path on stdout (or JSON), a
// summary on stderr.
func (g *globals) printExport(asJSON bool, res *bundle.ExportResult, out, sigOut string) error {
	if asJSON {
		return writeJSON(g.stdout, struct {
			*bundle.ExportResult
			File     string `json:"file"`
			Sigstore string `json:"sigstore_file"`
		}{res, out, sigOut})
	}
	fmt.Fprintf(g.stdout, "%s\n", out)
	fmt.Fprintf(g.stderr, "exported run %s to %s: %d files, %d bytes, signed by %s at %s\n",
		res.RunID, out, res.Files, res.Size, res.KeyID, res.SignedAt.Format(time.RFC3339Nano))
	fmt.Fprintf(g.stderr, "wrote Sigstore bundle %s\n", sigOut)
	fmt.Fprintf(g.stderr, "bundle file sha256 %s\n", res.SHA256)
	for _, p := range res.Products {
		fmt.Fprintf(g.stderr, "product %s %s (check %s, %d bytes)\n", p.SHA256, printable.Escape(p.Path), p.Check, p.Size)
	}
	return nil
}

// runOpener opens a run of the state directory state by id for reading,
// from its verified archive when `proofgate prune` archived it.
func runOpener(state string) bundle.RunOpener {
	return func(id string) (string, func(), error) {
		dir, _, done, err := run.ReadDir(state, id)
		return dir, done, err
	}
}
