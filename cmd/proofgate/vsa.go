package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/spf13/cobra"
)

// vsaHelp is appended to bundle verify's help.
const vsaHelp = `

--vsa FILE writes a signed SLSA Verification Summary Attestation
(https://slsa.dev/verification_summary/v1, docs/SPEC.md section 9) for a
deploy gate downstream: a DSSE envelope signed with --vsa-key (the gate's
key, never the bundle's) over an in-toto statement naming the archive
(sha256 of its bytes), the sha256 of the policy it was held to, and the
result. It is written for both verdicts: verificationResult PASSED (level
PROOFGATE_VERIFIED, or PROOFGATE_VERIFIED_UNSAFE under --any-source,
--any-contract or --allow-dirty) when the bundle is accepted, FAILED when it
is refused (the reason is in this command's output, not the summary); none
when the input is unusable (exit 2). --vsa-policy POLICY also writes the
policy document, the file whose sha256 is the summary's policy digest (the
requirements, keyless identities and trust material's digests), for a
consumer that reads it or trusts a repository-bound gate key. An existing
file is refused unless --force; each appears whole or not at all.
--vsa-keyless signs instead with an ephemeral key that Fulcio certifies for
the OIDC token's identity (--vsa-id-token-file or $SIGSTORE_ID_TOKEN) and
an RFC 3161 timestamp: FILE is then a Sigstore bundle that cosign
verify-blob-attestation and gh attestation verify check against the
archive (docs/verify.md). Check a summary with "proofgate vsa verify".`

// vsaFlags are bundle verify's --vsa flags.
type vsaFlags struct {
	out, policyOut, key, verifierID, resourceURI string
	force                                        bool
	keyless                                      keylessExportFlags // --vsa-keyless and its services
}

func (f *vsaFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.out, "vsa", "", "also write a signed SLSA verification summary (PASSED or FAILED) to FILE")
	fl.StringVar(&f.policyOut, "vsa-policy", "", "also write the --vsa summary's policy document (the file its policy digest names) to FILE")
	fl.StringVar(&f.key, "vsa-key", "", "the gate's key that signs the --vsa summary: PKCS#8 PEM file or env:VAR")
	f.keyless.registerPrefixed(c, "vsa-", "the --vsa summary")
	fl.StringVar(&f.verifierID, "vsa-verifier-id", "", "verifier.id of the summary (a URI; default "+vsa.DefaultVerifierID+")")
	fl.StringVar(&f.resourceURI, "vsa-resource-uri", "", "resourceUri of the summary (a URI; default "+vsa.ResourcePrefix+"<sha256>)")
	fl.BoolVar(&f.force, "force", false, "replace an existing --vsa FILE")
	c.Long += vsaHelp
}

// vsaWrite is one --vsa summary in progress: checked and keyed before the
// bundle is verified, hashing what the verifier reads.
type vsaWrite struct {
	f       *vsaFlags
	cmd     *cobra.Command
	signer  vsa.Signer              // --vsa-key, or nil
	keyless envelope.MaterialSigner // --vsa-keyless, or nil
	archive string
	hasher  *vsa.Hasher
}

// Keyless verification flags (docs/adr/0010) that bundle verify may have:
// the trusted root is trust material, the others identity requirements.
// A flag the command does not define is skipped.
var (
	vsaTrustFlags    = []string{"trusted-root"}
	vsaIdentityFlags = identityFlags // every keyless identity flag (keyless.go)
)

// trustAndIdentities hashes the trust store and any trusted root, and
// lists the identity flags given.
func (w *vsaWrite) trustAndIdentities(trustPath string) ([]vsa.Resource, map[string]string, error) {
	var paths []string
	if trustPath != "" { // optional with --trusted-root
		paths = append(paths, trustPath)
	}
	for _, n := range vsaTrustFlags {
		if fl := w.cmd.Flags().Lookup(n); fl != nil && fl.Value.String() != "" {
			paths = append(paths, fl.Value.String())
		}
	}
	var res []vsa.Resource
	for _, p := range paths {
		b, err := bounded.ReadFile(p, 64<<20)
		if err != nil {
			return nil, nil, envErr(err)
		}
		res = append(res, vsa.TrustFile(filepath.Base(p), b))
	}
	var ids map[string]string
	for _, n := range vsaIdentityFlags {
		if fl := w.cmd.Flags().Lookup(n); fl != nil && fl.Changed {
			if ids == nil {
				ids = map[string]string{}
			}
			ids[n] = fl.Value.String()
		}
	}
	return res, ids, nil
}

// begin checks the --vsa flags and loads the key before anything is
// verified; it returns nil without --vsa.
func (f *vsaFlags) begin(c *cobra.Command, g *globals, archivePath string) (*vsaWrite, error) {
	changed := c.Flags().Changed
	if f.out == "" {
		if changed("vsa") {
			return nil, usageErr(errors.New("--vsa is empty"))
		}
		for _, n := range []string{"vsa-policy", "vsa-key", "vsa-keyless", "vsa-fulcio-url", "vsa-tsa-url", "vsa-rekor-url", "vsa-id-token-file", "vsa-verifier-id", "vsa-resource-uri", "force"} {
			if changed(n) {
				return nil, usageErr(fmt.Errorf("--%s is given without --vsa FILE", n))
			}
		}
		return nil, nil
	}
	prefixed := func(n string) bool { return changed("vsa-" + n) }
	if err := f.keyless.checkPrefixed(prefixed, f.key, "vsa-"); err != nil {
		return nil, err
	}
	if f.key == "" && !f.keyless.keyless {
		return nil, usageErr(errors.New("--vsa needs --vsa-key (the gate's signing key: a PKCS#8 PEM file or env:VAR, not the bundle's) or --vsa-keyless"))
	}
	if err := g.checkOutput("--vsa", f.out); err != nil {
		return nil, err
	}
	if err := f.checkOutputs(c, g, archivePath); err != nil {
		return nil, err
	}
	w := &vsaWrite{f: f, cmd: c, archive: archivePath}
	if f.keyless.keyless {
		ms, err := f.keyless.signerPrefixed("vsa-")
		if err != nil {
			return nil, err
		}
		w.keyless = ms
	} else {
		s, err := key.Load(f.key)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--vsa-key: %w", err))
		}
		w.signer = s
	}
	// The URIs are checked now, not after the verification.
	probe := vsa.Input{Name: "probe", Archive: &vsa.Archive{SHA256: strings.Repeat("0", 64)},
		ResourceURI: f.resourceURI, VerifierID: f.verifierID, Verdict: bundle.Refusal("probe", "", "")}
	if _, err := vsa.New(probe); err != nil {
		return nil, usageErr(fmt.Errorf("--%s: %w", vsaFlagOf(err), err))
	}
	return w, nil
}

// checkOutputs refuses --vsa and --vsa-policy paths inside the run store,
// equal to the bundle's or each other, or existing without --force.
func (f *vsaFlags) checkOutputs(c *cobra.Command, g *globals, archivePath string) error {
	outs := [][2]string{{"--vsa", f.out}}
	if f.policyOut != "" {
		outs = append(outs, [2]string{"--vsa-policy", f.policyOut})
		if filepath.Clean(f.policyOut) == filepath.Clean(f.out) {
			return usageErr(fmt.Errorf("--vsa-policy %s: the same file as --vsa", f.policyOut))
		}
	} else if c.Flags().Changed("vsa-policy") {
		return usageErr(errors.New("--vsa-policy is empty"))
	}
	for _, o := range outs {
		if err := g.checkOutput(o[0], o[1]); err != nil {
			return err
		}
		if filepath.Clean(o[1]) == filepath.Clean(archivePath) {
			return usageErr(fmt.Errorf("%s %s: the same file as the bundle", o[0], o[1]))
		}
		if _, err := os.Lstat(o[1]); err == nil && !f.force {
			return outputErr(fmt.Errorf("%s %s: %w", o[0], o[1], fs.ErrExist))
		}
	}
	return nil
}

func vsaFlagOf(err error) string {
	var e *vsa.Error
	if errors.As(err, &e) && e.Field == "ResourceURI" {
		return "vsa-resource-uri"
	}
	return "vsa-verifier-id"
}

// reader returns what to verify from: r itself, hashed when a summary is
// to be written.
func (w *vsaWrite) reader(r io.Reader) io.Reader {
	if w == nil {
		return r
	}
	w.hasher = vsa.NewHasher(r)
	return w.hasher.Reader()
}

// write signs and writes the summary of verdict v, reached under opts with
// the trust store at trustPath.
func (w *vsaWrite) write(ctx context.Context, g *globals, trustPath string, opts bundle.VerifyOptions, v bundle.Verdict) error {
	if w == nil {
		return nil
	}
	st, doc, err := w.statement(trustPath, opts, v)
	if err != nil {
		return err
	}
	signedBy, err := app.WriteSummary(ctx, st, doc, app.SummaryOptions{Key: w.signer, Keyless: w.keyless,
		Out: w.f.out, Policy: w.f.policyOut, Replace: w.f.force})
	var fe *app.SummaryFileError
	switch {
	case errors.As(err, &fe) && fe.Path == w.f.policyOut:
		return outputErr(fmt.Errorf("--vsa-policy %s: %w", fe.Path, fe.Err))
	case errors.As(err, &fe):
		return outputErr(fmt.Errorf("--vsa %s: %w", fe.Path, fe.Err))
	case err != nil:
		return envErr(err)
	}
	fmt.Fprintf(g.stderr, "wrote VSA %s (%s, policy sha256 %s, signed by %s)\n", w.f.out, st.Predicate.VerificationResult,
		st.Predicate.Policy.Digest["sha256"], signedBy)
	if w.f.policyOut != "" {
		fmt.Fprintf(g.stderr, "wrote its policy document %s\n", w.f.policyOut)
	}
	return nil
}

// statement is the summary and its policy document: the archive as
// verified (read again to list its signed members, and refused if its
// bytes changed meanwhile), the policy, the trust store's digest and the
// verdict.
func (w *vsaWrite) statement(trustPath string, opts bundle.VerifyOptions, v bundle.Verdict) (*vsa.Statement, []byte, error) {
	verified, _, err := w.hasher.Sum()
	if err != nil {
		return nil, nil, envErr(fmt.Errorf("read %s: %w", w.archive, err))
	}
	a, err := inspectFile(w.archive, opts)
	if err != nil {
		return nil, nil, err
	}
	if a.SHA256 != verified {
		return nil, nil, envErr(fmt.Errorf("%s changed while it was verified (sha256 %s, now %s): no summary written", w.archive, verified, a.SHA256))
	}
	p, err := opts.Policy()
	if err != nil {
		return nil, nil, usageErr(err)
	}
	tr, ids, err := w.trustAndIdentities(trustPath)
	if err != nil {
		return nil, nil, err
	}
	in := vsa.Input{Name: filepath.Base(w.archive), Archive: a, ResourceURI: w.f.resourceURI, VerifierID: w.f.verifierID,
		Policy: p.Describe(), Identities: ids, Trust: tr, Verdict: v, Time: opts.Now}
	st, doc, err := vsa.Summarize(in)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	return st, doc, nil
}

// inspectFile hashes the archive at path and lists its signed members.
func inspectFile(path string, opts bundle.VerifyOptions) (*vsa.Archive, error) {
	f, err := bounded.Open(path)
	if err != nil {
		return nil, envErr(err)
	}
	defer f.Close()
	lim := archive.DefaultLimits
	if opts.Limits != nil {
		lim = *opts.Limits
	}
	a, err := vsa.Inspect(f, lim)
	if err != nil {
		return nil, envErr(fmt.Errorf("read %s: %w", path, err))
	}
	return a, nil
}

func vsaCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "vsa", Short: "Check signed verification summaries (VSAs) of bundle verifications"}
	c.AddCommand(vsaVerifyCmd(g))
	return c
}

func vsaVerifyCmd(g *globals) *cobra.Command {
	var trustPath, subject, policyDigest, policyPath string
	var asJSON, allowUnsafe bool
	var kf keylessVerifyFlags
	c := &cobra.Command{
		Use:   "verify FILE (--trust trust.json | --trusted-root ROOT --signer-workflow W) [--subject ARCHIVE] [--policy POLICY] [--policy-digest sha256:HEX] [--allow-unsafe] [--json]",
		Short: "Verify a VSA written by bundle verify --vsa",
		Long: `Verify a verification summary: its DSSE signature with a key of the trust
store (the gate's key) before anything in it is read, the key's validity at
timeVerified, or, for a summary signed keyless (bundle verify --vsa-keyless:
a Sigstore bundle), with --trusted-root its certificate and timestamp and
the gate workflow's identity pinned by --signer-workflow (and the other
identity flags, or --trust's identities), timeVerified within the signing
window of the timestamp; then the statement (canonical, strictly decoded, the VSA v1
predicate, a result and levels ProofGate writes). With --policy, the policy
document written beside the summary (bundle verify --vsa-policy, the verify
action's output vsa-policy) must be the one its policy digest names; its
unsafe opt-outs must agree with the level, its witness time bound
timeVerified, and its repository is the one a gate key trusted for a
repository must be trusted for (such a key's summary is refused without
it). With --subject, the archive must be the summary's subject (sha256 of
its bytes) and signed before timeVerified; with --policy-digest, the policy
must be that one. A summary that passed
under an unsafe opt-out (level PROOFGATE_VERIFIED_UNSAFE: any source, any
contract or a dirty source) is refused (unsafe-policy) unless --allow-unsafe.

Exit 0 when the summary verifies and says PASSED; 1 when it is refused or
says FAILED; 2 on unusable input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := kf.check(cmd.Flags().Changed); err != nil {
				return err
			}
			b, err := bounded.ReadFile(args[0], envelope.MaxSize)
			if err != nil {
				return usageErr(err)
			}
			var doc []byte
			if policyPath != "" {
				if doc, err = bounded.ReadFile(policyPath, vsa.MaxPayload); err != nil {
					return usageErr(fmt.Errorf("--policy: %w", err))
				}
			}
			st, k, err := openVSA(b, trustPath, &kf, doc)
			if err == nil {
				err = checkVSA(st, subject, policyDigest)
			}
			var classified *exit.Error
			switch {
			case errors.As(err, &classified):
				return err
			case err != nil:
				return refusedErr(err)
			}
			signer := k.KeyID()
			if wk, ok := k.(envelope.WitnessedKey); ok {
				signer = fmt.Sprintf("%s (keyless, witnessed %s)", printable.Escape(wk.Signer()), wk.WitnessedAt().UTC().Format(time.RFC3339))
			}
			return reportVSA(g, st, signer, asJSON, allowUnsafe)
		},
	}
	c.Flags().StringVar(&trustPath, "trust", "", "trust store holding the gate's key (with --trusted-root: optional, its identities)")
	kf.register(c)
	c.Flags().StringVar(&subject, "subject", "", "the bundle archive the summary must name")
	c.Flags().StringVar(&policyPath, "policy", "", "the summary's policy document, checked against its policy digest")
	c.Flags().StringVar(&policyDigest, "policy-digest", "", "require the policy digest (sha256:<hex>)")
	c.Flags().BoolVar(&allowUnsafe, "allow-unsafe", false, "accept a summary that passed under an unsafe opt-out")
	c.Flags().BoolVar(&asJSON, "json", false, "print the statement as JSON")
	return c
}

// openVSA verifies summary b: keyless against the trusted root and pinned
// identities with --trusted-root, else with the --trust store's keys.
func openVSA(b []byte, trustPath string, kf *keylessVerifyFlags, doc []byte) (*vsa.Statement, envelope.TrustedKey, error) {
	var store *trust.Store
	if trustPath != "" {
		s, err := trust.Load(trustPath)
		if err != nil {
			return nil, nil, usageErr(err)
		}
		store = s
	}
	if kf.trustedRoot == "" {
		if store == nil {
			return nil, nil, usageErr(errors.New("--trust is required (or --trusted-root for a summary signed keyless)"))
		}
		return vsa.Open(b, store, doc)
	}
	mv, err := kf.verifiers(store)
	if err != nil {
		return nil, nil, err
	}
	st, k, err := vsa.OpenKeyless(b, mv, doc)
	if err != nil {
		return nil, nil, err
	}
	return st, k, nil
}

// checkVSA applies --subject and --policy-digest.
func checkVSA(st *vsa.Statement, subject, policyDigest string) error {
	if policyDigest != "" {
		want, ok := strings.CutPrefix(policyDigest, "sha256:")
		if !ok {
			return usageErr(fmt.Errorf("--policy-digest %q: want sha256:<hex>", printable.Escape(policyDigest)))
		}
		if got := st.Predicate.Policy.Digest["sha256"]; got != strings.ToLower(want) {
			return refusedErr(&vsa.VerifyError{Reason: vsa.PolicyMismatch, Detail: fmt.Sprintf("the summary's policy is sha256:%s, not %s", got, printable.Escape(policyDigest))})
		}
	}
	if subject == "" {
		return nil
	}
	a, err := inspectFile(subject, bundle.VerifyOptions{})
	if err != nil {
		return usageErr(err)
	}
	return st.MatchEvidence(a)
}

// reportVSA prints a verified summary; one that says FAILED exits 1, and
// so does one that passed under an unsafe opt-out unless allowUnsafe.
func reportVSA(g *globals, st *vsa.Statement, signer string, asJSON, allowUnsafe bool) error {
	p := &st.Predicate
	if asJSON {
		if err := writeJSON(g.stdout, st); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "%s: %s (sha256 %s), policy sha256 %s, levels %s, verified by %s at %s, signed by %s\n",
			p.VerificationResult, printable.Escape(st.Subject[0].Name), st.Subject[0].Digest["sha256"], p.Policy.Digest["sha256"],
			strings.Join(p.VerifiedLevels, ","), printable.Escape(p.Verifier.ID), p.TimeVerified, signer)
		if v := p.LegacyVerdict; v != nil && v.Verdict != bundle.VerdictAccepted {
			fmt.Fprintf(g.stdout, "the bundle was refused: %s: %s\n", printable.Escape(v.Reason), printable.Escape(v.Detail))
		}
	}
	if !st.Passed() {
		return silent(exit.Refused)
	}
	if slices.Contains(p.VerifiedLevels, vsa.LevelVerifiedUnsafe) && !allowUnsafe {
		opts := "an unsafe opt-out"
		if pol := st.Policy(); pol != nil {
			opts = fmt.Sprintf("the unsafe opt-outs %v", pol.Bundle.Unsafe)
		}
		return refusedErr(&vsa.VerifyError{Reason: vsa.UnsafePolicy,
			Detail: fmt.Sprintf("the bundle passed under %s (--allow-unsafe accepts it)", opts)})
	}
	return nil
}
