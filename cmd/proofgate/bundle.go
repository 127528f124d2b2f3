package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/record"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/spf13/cobra"
)

// addBundleCommands registers keygen, trust, bundle and events checkpoint.
func addBundleCommands(root *cobra.Command, g *globals) {
	root.AddCommand(keygenCmd(g), trustCmd(g), bundleCmd(g), vsaCmd(g))
	eventsCmd(root).AddCommand(checkpointCmd(g))
}

// eventsCmd returns the "events" parent command, creating it on first use.
func eventsCmd(root *cobra.Command) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == "events" {
			return c
		}
	}
	c := &cobra.Command{Use: "events", Short: "Verify, unlock and checkpoint a run's event log"}
	root.AddCommand(c)
	return c
}

// checkOutput refuses an output path inside the run store, where a named
// file could replace a run's evidence (bundle export -o once replaced a
// run's events.ndjson).
func (g *globals) checkOutput(flag, path string) error {
	if store := run.NewStore(g.state); store.Holds(path) {
		return usageErr(fmt.Errorf("%s %s: inside the run store %s, which only proofgate writes; choose a path outside it", flag, path, store.Dir))
	}
	return nil
}

// preflightOutput checks an output path before the work that fills it:
// outside the run store, and no existing file unless force.
func (g *globals) preflightOutput(flag, path string, force bool) error {
	if err := g.checkOutput(flag, path); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil && !force {
		return outputErr(fmt.Errorf("%s: %w", path, fs.ErrExist))
	}
	return nil
}

// writeOutput writes b to path (mode 0644, durably): a new file, or with
// force one that replaces what is there.
func writeOutput(path string, b []byte, force bool) error {
	if force {
		return durable.WriteFile(path, b, 0o644)
	}
	return durable.CreateExclusive(path, b, 0o644)
}

// sigstorePath is the default path of the Sigstore bundle beside the
// archive out: out without .tar.gz (or .tgz), plus .sigstore.json.
func sigstorePath(out string) string {
	for _, ext := range []string{".tar.gz", ".tgz"} {
		if strings.HasSuffix(out, ext) {
			return strings.TrimSuffix(out, ext) + ".sigstore.json"
		}
	}
	return out + ".sigstore.json"
}

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

// outputErr classifies a failed write of a file the user named: an
// existing file is a usage error that says how to replace it.
func outputErr(err error) error {
	if errors.Is(err, fs.ErrExist) {
		return usageErr(fmt.Errorf("%w (pass --force to replace it)", err))
	}
	return envErr(err)
}

// parseTime accepts RFC 3339 or "now".
func parseTime(flag, v string) (time.Time, error) {
	if v == "now" {
		return time.Now().UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, usageErr(fmt.Errorf("--%s: %q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z) or now", flag, v))
	}
	return t.UTC(), nil
}

func optTime(flag, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := parseTime(flag, v)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// loadSigner returns the signer --key names: an Ed25519 PKCS#8 key from a
// file or env:VAR.
func loadSigner(ref string) (envelope.Signer, error) {
	if ref == "" {
		return nil, usageErr(errors.New("--key is required (a PKCS#8 PEM file, or env:VAR)"))
	}
	s, err := key.Load(ref)
	if err != nil {
		return nil, usageErr(err)
	}
	return s, nil
}

func keygenCmd(g *globals) *cobra.Command {
	var out string
	var asJSON, force bool
	c := &cobra.Command{
		Use:   "keygen [-o key.pem] [--force]",
		Short: "Generate an Ed25519 signing key",
		Long: `Write a new Ed25519 private key as PKCS#8 PEM (mode 0600) and its public key
next to it (key.pem → key.pub.pem), and print the key id: the lowercase hex
SHA-256 of the public key's DER SubjectPublicKeyInfo. Existing files are never
overwritten unless --force is given. Keys made by "openssl genpkey -algorithm
ed25519" work as well.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range []string{out, key.PublicPath(out)} {
				if err := g.checkOutput("-o", p); err != nil {
					return err
				}
			}
			generate := key.Generate
			if force {
				generate = key.GenerateReplacing
			}
			id, err := generate(out)
			if err != nil {
				return outputErr(err)
			}
			pub, err := os.ReadFile(key.PublicPath(out))
			if err != nil {
				return envErr(err)
			}
			if asJSON {
				return writeJSON(g.stdout, map[string]string{"key_id": id, "private_key": out,
					"public_key": key.PublicPath(out), "public_key_pem": string(pub)})
			}
			fmt.Fprintf(g.stdout, "%s\n%s", id, pub)
			fmt.Fprintf(g.stderr, "wrote %s (private, 0600) and %s\n", out, key.PublicPath(out))
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "key.pem", "private key file to create")
	c.Flags().BoolVar(&force, "force", false, "replace existing key files")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func trustCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "trust", Short: "Manage the trust store of bundle signing keys"}
	var storePath string
	c.PersistentFlags().StringVar(&storePath, "store", "trust.json", "trust store file")
	retire := trustChangeCmd(g, &storePath, "retire")
	retire.Short = "Retire a key: bundles signed up to --at (default now) still verify"
	revoke := trustChangeCmd(g, &storePath, "revoke")
	revoke.Short = "Revoke a key: bundles signed at or after --at, or all without --at, are refused"
	c.AddCommand(trustAddCmd(g, &storePath), trustAddIdentityCmd(g, &storePath), retire, revoke, trustListCmd(g, &storePath))
	return c
}

func trustAddCmd(g *globals, storePath *string) *cobra.Command {
	var pubFile, identity, notBefore, notAfter string
	add := &cobra.Command{
		Use:   "add --store trust.json --public-key key.pub.pem [--identity S] [--not-before T] [--not-after T]",
		Short: "Add an active key and print its id",
		Long: `Add a public key as active. --identity (e.g. repo:owner/name) makes the key
valid only for bundles of that repository; --not-before/--not-after bound the
signing times it is valid for. The store is rewritten atomically.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pubFile == "" {
				return usageErr(errors.New("--public-key is required"))
			}
			if identity != "" {
				if err := checkKeyIdentity(identity); err != nil {
					return err
				}
			}
			nb, err := optTime("not-before", notBefore)
			if err != nil {
				return err
			}
			na, err := optTime("not-after", notAfter)
			if err != nil {
				return err
			}
			if err := g.checkOutput("--store", *storePath); err != nil {
				return err
			}
			s, err := trust.LoadOrNew(*storePath)
			if err != nil {
				return usageErr(err)
			}
			_, pemBytes, err := key.LoadPublic(pubFile)
			if err != nil {
				return usageErr(err)
			}
			id, err := s.Add(pemBytes, identity, nb, na)
			if err != nil {
				return usageErr(err)
			}
			if err := s.Save(*storePath); err != nil {
				return envErr(err)
			}
			fmt.Fprintln(g.stdout, id)
			return nil
		},
	}
	add.Flags().StringVar(&pubFile, "public-key", "", "public key PEM file")
	add.Flags().StringVar(&identity, "identity", "", "identity the key may sign for, e.g. repo:owner/name")
	add.Flags().StringVar(&notBefore, "not-before", "", "earliest signing time accepted (RFC 3339)")
	add.Flags().StringVar(&notAfter, "not-after", "", "latest signing time accepted (RFC 3339)")
	return add
}

// trustChangeCmd is "trust retire" or "trust revoke" (verb).
func trustChangeCmd(g *globals, storePath *string, verb string) *cobra.Command {
	var keyID, keyFile, identityID, at string
	c := &cobra.Command{
		Use:  verb + " --store trust.json (--key-id ID | --identity-id NAME) [--at T]",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if identityID != "" {
				return changeIdentity(g, *storePath, verb, identityID, keyID, keyFile, at)
			}
			id, err := keyIDFlag(keyID, keyFile)
			if err != nil {
				return err
			}
			s, err := trust.Load(*storePath)
			if err != nil {
				return usageErr(err)
			}
			if err := changeKey(s, verb, id, at); err != nil {
				return err
			}
			if err := s.Save(*storePath); err != nil {
				return envErr(err)
			}
			fmt.Fprintf(g.stdout, "%s %sd\n", id, verb)
			return nil
		},
	}
	c.Flags().StringVar(&keyID, "key-id", "", "key id")
	c.Flags().StringVar(&keyFile, "public-key", "", "public key PEM file (instead of --key-id)")
	registerIdentityID(c, &identityID)
	if verb == "retire" {
		c.Flags().StringVar(&at, "at", "", "retirement time (RFC 3339, default now)")
	} else {
		c.Flags().StringVar(&at, "at", "", "revocation time (RFC 3339); without it every signature is refused")
	}
	return c
}

// keyIDFlag returns the key id that exactly one of --key-id and
// --public-key names.
func keyIDFlag(keyID, keyFile string) (string, error) {
	if (keyID == "") == (keyFile == "") {
		return "", usageErr(errors.New("give exactly one of --key-id and --public-key"))
	}
	if keyFile == "" {
		return keyID, nil
	}
	pub, _, err := key.LoadPublic(keyFile)
	if err != nil {
		return "", usageErr(err)
	}
	id, err := key.ID(pub)
	if err != nil {
		return "", usageErr(err)
	}
	return id, nil
}

// changeKey retires (at, default now) or revokes (at, default always) key
// id in s.
func changeKey(s *trust.Store, verb, id, at string) error {
	return change(verb, at, func(t time.Time) error { return s.Retire(id, t) },
		func(t *time.Time) error { return s.Revoke(id, t) })
}

// change is "retire" (at, default now) or "revoke" (at, default always)
// of one trust store entry.
func change(verb, at string, retire func(time.Time) error, revoke func(*time.Time) error) error {
	var err error
	switch verb {
	case "retire":
		when := time.Now().UTC()
		if at != "" {
			if when, err = parseTime("at", at); err != nil {
				return err
			}
		}
		err = retire(when)
	case "revoke":
		var when *time.Time
		if when, err = optTime("at", at); err != nil {
			return err
		}
		err = revoke(when)
	}
	if err != nil {
		return usageErr(err)
	}
	return nil
}

func trustListCmd(g *globals, storePath *string) *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list --store trust.json [--json]",
		Short: "List the keys of the trust store",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := trust.Load(*storePath)
			if err != nil {
				return usageErr(err)
			}
			if asJSON {
				return writeJSON(g.stdout, s)
			}
			for _, k := range s.Keys {
				fmt.Fprintf(g.stdout, "%s %-7s identity=%s not_before=%s not_after=%s retired_at=%s revoked_at=%s\n",
					k.ID, esc(string(k.Status)), esc(orDash(k.Identity)), fmtTime(k.NotBefore), fmtTime(k.NotAfter), fmtTime(k.RetiredAt), fmtRevoked(&k))
			}
			printIdentities(g.stdout, s)
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return list
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtRevoked(k *trust.Key) string {
	if k.Status == trust.Revoked && k.RevokedAt == nil {
		return "always"
	}
	return fmtTime(k.RevokedAt)
}

func bundleCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "bundle", Short: "Export and verify signed evidence bundles"}
	c.AddCommand(exportCmd(g), verifyBundleCmd(g), agentSessionCmd(g))
	return c
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
				sigOut = sigstorePath(out)
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
			res, sb, err := exportSigned(rd, out, s, ms, opts)
			if err != nil {
				return err
			}
			if err := sigstore.WriteFile(sigOut, sb, force); err != nil {
				return outputErr(err)
			}
			if productsDir != "" {
				if err := writeProducts(rd, productsDir, res.Products, force); err != nil {
					return err
				}
			}
			return g.printExport(asJSON, res, out, sigOut)
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

// writeProducts writes the exported run's products under dir.
func writeProducts(runDir, dir string, ps []bundle.ProductVerdict, force bool) error {
	if err := run.WriteProducts(runDir, dir, bundle.ProductRecords(ps), force); err != nil {
		return outputErr(fmt.Errorf("--products %s: %w", dir, err))
	}
	return nil
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", envErr(fmt.Errorf("bundle directory: %w", err))
	}
	err := durable.CreateExclusive(filepath.Join(dir, ".gitignore"), []byte("# written by proofgate bundle export: bundles are not source\n*\n"), 0o644)
	if err != nil && !errors.Is(err, fs.ErrExist) {
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

// verifyFlags are bundle verify's policy flags.
type verifyFlags struct {
	trust, commit, tree, repo, profile, contractHash, witnessed string
	policy                                                      string // --policy FILE (gatepolicy.go)
	approvals                                                   int
	anySource, anyContract, allowDirty, asJSON                  bool
	requireSandbox                                              bool
	requireRules                                                []string
	requireAuthorizations                                       []string
	subjects                                                    []string
	keyless                                                     keylessVerifyFlags
}

func (f *verifyFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.trust, "trust", "", "trust store (trust.json)")
	fl.StringVar(&f.commit, "commit", "", "require the run's source commit (full SHA)")
	fl.StringVar(&f.tree, "tree", "", "require the run's source tree (full SHA; merge/squash commits)")
	fl.BoolVar(&f.anySource, "any-source", false, "accept a run of any commit and tree (unsafe for a release gate)")
	fl.StringVar(&f.contractHash, "contract-hash", "", "require the run's contract hash (sha256:<hex>)")
	fl.BoolVar(&f.anyContract, "any-contract", false, "accept a run under any contract (unsafe for a release gate)")
	fl.BoolVar(&f.allowDirty, "allow-dirty", false, "accept a run planned on a work tree with uncommitted changes")
	fl.StringVar(&f.repo, "repo", "", "require the run's repository (owner/name, compared without case)")
	fl.StringVar(&f.profile, "profile", "", `require the run's contract profile (exact; "" = the base contract); with --contract, also the profile it is resolved with`)
	fl.IntVar(&f.approvals, "require-approvals", 1, "minimum distinct approvals")
	fl.StringVar(&f.witnessed, "witnessed-at", "", "a time the bundle existed by, from a witness the signer does not control (RFC 3339, e.g. the artifact's created_at)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	fl.BoolVar(&f.requireSandbox, "require-sandbox", false, "refuse a run with a check that did not run in the docker sandbox (runtime: docker)")
	fl.StringArrayVar(&f.requireRules, "require-rule", nil, "refuse a run whose approval did not satisfy this approval rule of the contract (repeatable; see approval.rules)")
	fl.StringArrayVar(&f.requireAuthorizations, "require-authorization", nil, "refuse a run that does not authorize publishing to this target (repeatable; see 'proofgate authorize')")
	fl.StringArrayVar(&f.subjects, "subject", nil, "refuse the bundle unless FILE is a product of a passed check of the run, by its SHA-256 (repeatable; see produces: in the contract)")
	fl.StringVar(&f.policy, "policy", "", "the gate's policy document (a VSA policy document: requirements, identities, pinned trust material) instead of their flags")
	f.keyless.register(c)
}

// options turns the flags into a verify policy. A flag given as "" is a
// usage error here (an empty value never means "any"); what the policy
// requires is checked by bundle.VerifyOptions.Policy and worded here with
// the flags' names.
func (f *verifyFlags) options(c *cobra.Command, g *globals) (bundle.VerifyOptions, error) {
	var o bundle.VerifyOptions
	changed := c.Flags().Changed
	var gp *gatePolicy
	if f.policy != "" {
		var err error
		if gp, err = applyPolicyFile(c, f.policy); err != nil {
			return o, err
		}
	} else if changed("policy") {
		return o, usageErr(errors.New("--policy is empty"))
	}
	for _, fl := range []struct{ name, v string }{{"commit", f.commit}, {"tree", f.tree}, {"repo", f.repo}, {"contract-hash", f.contractHash}, {"trust", f.trust}} {
		if changed(fl.name) && fl.v == "" {
			return o, usageErr(fmt.Errorf("--%s is empty; an empty value never means \"any\"", fl.name))
		}
	}
	if changed("contract") && g.contract == "" {
		return o, usageErr(errors.New("--contract is empty"))
	}
	if err := f.keyless.check(changed); err != nil {
		return o, err
	}
	if f.trust == "" && f.keyless.trustedRoot == "" {
		return o, usageErr(errors.New("--trust is required (or --trusted-root, for keyless bundles)"))
	}
	o.Commit, o.Tree, o.AnySource, o.Repo = strings.ToLower(f.commit), strings.ToLower(f.tree), f.anySource, f.repo
	o.RequireApprovals, o.AllowDirty, o.AnyContract, o.ContractHash = f.approvals, f.allowDirty, f.anyContract, f.contractHash
	o.RequireSandbox = f.requireSandbox
	for _, r := range f.requireRules {
		if r == "" {
			return o, usageErr(errors.New("--require-rule is empty"))
		}
	}
	o.RequireRules = f.requireRules
	o.RequireAuthorizations = f.requireAuthorizations
	for _, name := range f.subjects {
		d, err := bounded.SHA256File(name)
		if err != nil {
			return o, usageErr(fmt.Errorf("--subject: %w", err))
		}
		o.RequireSubjects = append(o.RequireSubjects, d)
	}
	if gp != nil {
		if len(gp.subjects) > 0 && len(f.subjects) > 0 {
			return o, usageErr(errPolicyWithSubject)
		}
		o.RequireSubjects = append(o.RequireSubjects, gp.subjects...)
		if err := gp.checkTrust(f.trust, f.keyless.trustedRoot); err != nil {
			return o, err
		}
	}
	if changed("profile") {
		o.Profile = &f.profile
	}
	if changed("contract") {
		// --contract FILE is a third way to give the contract hash.
		if f.contractHash != "" || f.anyContract {
			return o, usageErr(errContractChoice)
		}
		rc, err := contract.Load(g.contract, f.profile)
		if err != nil {
			return o, usageErr(err)
		}
		if o.ContractHash, err = rc.Hash(); err != nil {
			return o, usageErr(err)
		}
	}
	if f.witnessed != "" {
		t, err := parseTime("witnessed-at", f.witnessed)
		if err != nil {
			return o, err
		}
		o.Witnessed = t
	}
	if _, err := o.Policy(); err != nil {
		return o, f.policyErr(err)
	}
	return o, nil
}

var errContractChoice = errors.New("give exactly one of --contract FILE [--profile P], --contract-hash sha256:<hex> or --any-contract: the gate must say which contract the run had to use")

// policyErr words a *bundle.PolicyError with the flags' names.
func (f *verifyFlags) policyErr(err error) error {
	var pe *bundle.PolicyError
	if !errors.As(err, &pe) {
		return usageErr(err)
	}
	switch pe.Field {
	case bundle.PolicySource:
		return usageErr(errors.New("give exactly one of --commit SHA, --tree SHA or --any-source: the gate must say which source it accepts"))
	case bundle.PolicyContract:
		return usageErr(errContractChoice)
	case bundle.PolicyApprovals:
		return usageErr(errors.New("--require-approvals must be >= 0"))
	case bundle.PolicyRepo:
		return usageErr(fmt.Errorf("--repo %q: want owner/name", printable.Escape(f.repo)))
	case bundle.PolicyAuthorization:
		return usageErr(fmt.Errorf("--require-authorization: %s", strings.TrimPrefix(pe.Error(), "bundle verify policy: ")))
	}
	return usageErr(err)
}

func verifyBundleCmd(g *globals) *cobra.Command {
	var f verifyFlags
	var vf vsaFlags
	c := &cobra.Command{
		Use:   "verify FILE (--trust trust.json | --trusted-root trusted_root.json [--signer-workflow W[@REF]] ...) (--commit SHA | --tree SHA | --any-source) (--contract FILE | --contract-hash H | --any-contract) [--repo OWNER/NAME] [--profile NAME] [--require-approvals N] [--require-rule NAME]... [--allow-dirty] [--require-sandbox] [--subject FILE]... [--json]",
		Short: "Verify an evidence bundle offline",
		Long: `Verify a bundle, failing closed, in this order: a safe archive read; the
DSSE signature with a key from the trust store; the key's status and validity
at the signing time (and, with --witnessed-at, that the key was neither
retired nor revoked when the bundle was witnessed); every subject digest with
no file missing or extra; the event chain and a full audit of the run from the
bundled files; the predicate against that audit; a plausible signing time (not
before the run's last event, not after now or the witness time plus 5
minutes); the carried checkpoint; --commit or --tree; --repo; a clean source
(a run planned with --allow-dirty is refused unless --allow-dirty is given
here); --profile (exact; --profile "" requires the base contract); the
contract; with --require-sandbox, that every check ran with runtime: docker
(refused as unsandboxed-check naming the others); and at least
--require-approvals distinct approvals (default 1); with --require-rule
NAME (repeatable), that an approval was credited to the contract's
approval rule NAME (refused as rule-not-satisfied); with
--require-authorization TARGET (repeatable), that a tracking authorization
('proofgate authorize') approved TARGET and none rejected it (refused as
authorization-missing or authorization-rejected); with --subject FILE
(repeatable), that FILE's SHA-256 is a product of a passed check of the run
(produces: in the contract; refused as not-a-product). An accepted verdict
lists the checks that did not run sandboxed ("unsandboxed" in --json) and
the run's products; every verdict states the bundle file's own SHA-256.

The gate must say what it accepts. The source: --commit SHA, --tree SHA (a
merge or squash commit whose tree equals the verified head's), or
--any-source. The contract: --contract FILE (resolved with --profile, e.g. the
release commit's .proofgate/contract.yaml: a run under another or a weakened
contract is refused), --contract-hash sha256:<hex>, or --any-contract. SHAs
are full 40-hex (or 64-hex) values; an empty flag value is an error, never
"any".

Keyless bundles (bundle export --keyless) verify with --trusted-root
trusted_root.json (read offline) and at least one pinned identity: the flags'
(--signer-workflow OWNER/REPO/.github/workflows/F.yml[@REF], --source-repo,
--source-ref, --certificate-oidc-issuer) or the --trust store's identities.
The witnessed time (the timestamp's) stands for the signing time; --trust is
then optional (key-signed bundles are refused without it).

--policy FILE takes the requirements from a document instead of flags: the
policy document a summary names (bundle verify --vsa-policy writes one),
{"bundle": {"contract_hash": …, "require_approvals": 2, …}, "identities":
{"signer-workflow": …}, "trust": [{"name": "trust.json", "digest":
{"sha256": …}}]}. Each member stands for its flag; what it leaves out (say,
the release's commit) comes from the flags; a member and its flag both
given is refused; a trust entry pins the digest of the --trust or
--trusted-root file of that name.

Exit 0 accepted, 1 refused (with a typed reason), 2 unusable input.`,
		Example: `  proofgate bundle verify run.bundle.tar.gz --trust trust.json \
      --commit "$(git rev-parse HEAD)" --contract .proofgate/contract.yaml --repo acme/widget`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runVerifyBundle(cmd, g, &f, &vf, args[0]) },
	}
	f.register(c)
	vf.register(c)
	return c
}

// runVerifyBundle is bundle verify: the policy from the flags, the trust
// store and material verifiers, the verdict (printed, and as a VSA when
// asked), exit 1 when refused.
func runVerifyBundle(cmd *cobra.Command, g *globals, f *verifyFlags, vf *vsaFlags, path string) error {
	opts, err := f.options(cmd, g)
	if err != nil {
		return err
	}
	vw, err := vf.begin(cmd, g, path)
	if err != nil {
		return err
	}
	store, mv, err := f.verifyStores()
	if err != nil {
		return err
	}
	opts.Material = mv
	file, err := bounded.Open(path)
	if err != nil {
		return usageErr(err)
	}
	defer file.Close()
	h := sha256.New()
	r := io.TeeReader(vw.reader(file), h)
	v, err := bundle.VerdictOf(bundle.Verify(r, store, opts))
	if _, cerr := io.Copy(io.Discard, r); cerr == nil {
		v.ArchiveSHA256 = hex.EncodeToString(h.Sum(nil))
	}
	var pe *bundle.PolicyError
	switch {
	case errors.As(err, &pe):
		return usageErr(err)
	case err != nil:
		return envErr(err)
	}
	if f.asJSON {
		if err := writeJSON(g.stdout, v); err != nil {
			return err
		}
	} else {
		printVerdict(g.stdout, &v)
	}
	if err := vw.write(cmd.Context(), g, f.trust, opts, v); err != nil {
		return err
	}
	if v.Verdict != bundle.VerdictAccepted {
		return silent(exit.Refused)
	}
	return nil
}

func printVerdict(w io.Writer, v *bundle.Verdict) {
	if v.Verdict != bundle.VerdictAccepted {
		fmt.Fprintf(w, "refused: %s: %s\n", v.Reason, printable.Escape(v.Detail))
		return
	}
	src := "clean source"
	if *v.Dirty {
		src = "DIRTY source (planned with --allow-dirty; accepted because --allow-dirty was given)"
	}
	signer := v.KeyID
	if v.Signer != "" {
		signer = "keyless " + printable.Escape(v.Signer) + " (witnessed)"
	}
	fmt.Fprintf(w, "accepted: run %s, commit %s, tree %s, %s, contract %s, %d approval(s), signed by %s at %s\n",
		v.RunID, v.Commit, v.Tree, src, v.ContractHash, v.Approvals, signer, v.SignedAt)
	printUnsandboxed(w, v)
	printAuthorized(w, v)
	printImplementedBy(w, v)
	for _, p := range v.Products {
		fmt.Fprintf(w, "product: %s %s (check %s, %d bytes)\n", p.SHA256, printable.Escape(p.Path), p.Check, p.Size)
	}
	if v.ArchiveSHA256 != "" {
		fmt.Fprintf(w, "bundle file: sha256 %s\n", v.ArchiveSHA256)
	}
}

func checkpointCmd(g *globals) *cobra.Command {
	var keyRef, out string
	var asJSON, force bool
	var sf stateFlags
	c := &cobra.Command{
		Use:   "checkpoint (RUN | --all [--repo-id ID]) --key key.pem [-o FILE] [--force]",
		Short: "Sign a checkpoint of a run's event chain, or of every run (--all)",
		Long: `Sign {run, length, head, time} of the run's event log under its writer lock,
store it as checkpoints/<length>.dsse.json in the run directory (and in FILE
with -o), and record a checkpoint.signed event. "events verify RUN
--checkpoint FILE --trust trust.json" later detects entries rewritten or
removed before that point. An existing FILE is refused unless --force; a
FILE inside the run store (<state>/runs) always is.

With --all (no RUN), sign one state checkpoint over every run in the state
directory: each run's id, chain length and head (every chain is verified
first), bound to this repository (its root commit, and --repo-id if given),
stored as <state>/runs/.state-checkpoints/state-<ns>.dsse.json. "events verify --all
--checkpoint FILE --trust trust.json" later detects a deleted run, a
truncated or rewritten one, and a state directory of another repository.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.all {
				return stateCheckpoint(cmd, g, &sf, keyRef, out, force, asJSON)
			}
			if sf.repoID != "" {
				return usageErr(errors.New("--repo-id goes with --all"))
			}
			s, err := loadSigner(keyRef)
			if err != nil {
				return err
			}
			if out != "" {
				if err := g.preflightOutput("-o", out, force); err != nil {
					return err
				}
			}
			rec, err := record.Checkpoint(g.state, args[0], s, time.Now())
			if err != nil {
				return classify(err)
			}
			if out != "" {
				if err := writeOutput(out, rec.Envelope, force); err != nil {
					return outputErr(fmt.Errorf("the checkpoint is recorded in %s; writing %s: %w", rec.Path, out, err))
				}
			}
			if asJSON {
				return writeJSON(g.stdout, map[string]any{"run_id": rec.Run, "length": rec.Length, "head": rec.Head,
					"time": rec.Time, "key_id": rec.KeyID, "file": rec.Path})
			}
			fmt.Fprintf(g.stdout, "checkpoint of run %s at %d events, head %s\n%s\n", rec.Run, rec.Length, rec.Head, rec.Path)
			return nil
		},
	}
	c.Flags().StringVar(&keyRef, "key", "", "private key: PKCS#8 PEM file or env:VAR")
	c.Flags().StringVarP(&out, "output", "o", "", "also write the checkpoint to FILE")
	c.Flags().BoolVar(&force, "force", false, "replace an existing FILE")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	sf.register(c, "sign")
	return c
}

// runOpener opens a run of the state directory state by id for reading,
// from its verified archive when `proofgate prune` archived it.
func runOpener(state string) bundle.RunOpener {
	return func(id string) (string, func(), error) {
		dir, _, done, err := run.ReadDir(state, id)
		return dir, done, err
	}
}
