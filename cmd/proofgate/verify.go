package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/asynchash"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/spf13/cobra"
)

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
	h := asynchash.New(sha256.New()) // the file's own digest, hashed beside the verification
	r := io.TeeReader(vw.reader(file), h)
	v, err := bundle.VerdictOf(bundle.Verify(r, store, opts))
	if _, cerr := io.Copy(io.Discard, r); cerr == nil {
		v.ArchiveSHA256 = hex.EncodeToString(h.Sum())
	} else {
		h.Sum() // ends its goroutine
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
