package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/spf13/cobra"
)

// Keyless bundles on the command line (ADR 0010): `bundle export
// --keyless` signs with a Fulcio certificate and a timestamp, `bundle
// verify --trusted-root` verifies them against identity policies from the
// flags and the trust store.

// keylessVerifyFlags are bundle verify's keyless flags.
type keylessVerifyFlags struct {
	trustedRoot, issuer, signerWorkflow, sourceRepo, sourceRef string
}

// identityFlags are the flags that describe the "flags" identity.
var identityFlags = []string{"certificate-oidc-issuer", "signer-workflow", "source-repo", "source-ref"}

func (f *keylessVerifyFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.trustedRoot, "trusted-root", "", "Sigstore trusted_root.json: verify keyless bundles against its Fulcio CAs, timestamp authorities and logs (offline)")
	fl.StringVar(&f.issuer, "certificate-oidc-issuer", "", "keyless: the certificate's OIDC issuer (default "+sigstore.DefaultIssuer+")")
	fl.StringVar(&f.signerWorkflow, "signer-workflow", "", "keyless: the signing workflow, OWNER/REPO/.github/workflows/FILE[@REF] (without @REF, any ref)")
	fl.StringVar(&f.sourceRepo, "source-repo", "", "keyless: the certificate's source repository, OWNER/REPO")
	fl.StringVar(&f.sourceRef, "source-ref", "", "keyless: the certificate's source ref, e.g. refs/heads/main")
}

// check refuses empty values and identity flags without --trusted-root.
func (f *keylessVerifyFlags) check(changed func(string) bool) error {
	vals := map[string]string{"trusted-root": f.trustedRoot, "certificate-oidc-issuer": f.issuer,
		"signer-workflow": f.signerWorkflow, "source-repo": f.sourceRepo, "source-ref": f.sourceRef}
	for _, name := range append([]string{"trusted-root"}, identityFlags...) {
		if changed(name) && vals[name] == "" {
			return usageErr(fmt.Errorf("--%s is empty; an empty value never means \"any\"", name))
		}
	}
	for _, name := range identityFlags {
		if vals[name] != "" && f.trustedRoot == "" {
			return usageErr(fmt.Errorf("--%s needs --trusted-root: identities are checked only on keyless bundles, against a Sigstore trusted root", name))
		}
	}
	if id := f.flagsIdentity(); id != nil {
		ti := trust.Identity{Issuer: id.Issuer, SignerWorkflow: id.SignerWorkflow, SourceRepo: id.SourceRepo, SourceRef: id.SourceRef}
		if err := ti.CheckPolicy("identity flags"); err != nil {
			return usageErr(fmt.Errorf("%w (--signer-workflow OWNER/REPO/.github/workflows/FILE[@REF], --source-repo OWNER/REPO, --source-ref refs/…, --certificate-oidc-issuer an http(s) URL)", err))
		}
	}
	return nil
}

// flagsIdentity is the identity the flags describe, or nil.
func (f *keylessVerifyFlags) flagsIdentity() *sigstore.Identity {
	if f.issuer == "" && f.signerWorkflow == "" && f.sourceRepo == "" && f.sourceRef == "" {
		return nil
	}
	return &sigstore.Identity{Name: "flags", Issuer: f.issuer, SignerWorkflow: f.signerWorkflow,
		SourceRepo: f.sourceRepo, SourceRef: f.sourceRef}
}

// identities are the flags' identity and the store's, each store identity
// valid only inside its lifecycle at the witnessed time.
func (f *keylessVerifyFlags) identities(store *trust.Store) []sigstore.Identity {
	var ids []sigstore.Identity
	if id := f.flagsIdentity(); id != nil {
		ids = append(ids, *id)
	}
	return append(ids, sigstore.TrustIdentities(store)...)
}

// verifiers returns the material verifiers --trusted-root asks for, or
// nil without it. An unpinned verifier (no identity from the flags or the
// store) is a usage error.
func (f *keylessVerifyFlags) verifiers(store *trust.Store) (envelope.MaterialVerifiers, error) {
	if f.trustedRoot == "" {
		return nil, nil
	}
	ids := f.identities(store)
	if len(ids) == 0 {
		return nil, usageErr(errors.New("--trusted-root: no identity to accept: give --signer-workflow (or --source-repo), or a --trust store with identities (trust add-identity); an unpinned identity is not accepted"))
	}
	mv, err := sigstore.LoadVerifiers(f.trustedRoot, ids)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--trusted-root %s: %w", f.trustedRoot, err))
	}
	return mv, nil
}

// verifyStores loads the trust store (optional with --trusted-root) and
// the material verifiers.
func (f *verifyFlags) verifyStores() (envelope.Verifiers, envelope.MaterialVerifiers, error) {
	var store *trust.Store
	var vs envelope.Verifiers
	if f.trust != "" {
		s, err := trust.Load(f.trust)
		if err != nil {
			return nil, nil, usageErr(err)
		}
		store, vs = s, s
	}
	mv, err := f.keyless.verifiers(store)
	if err != nil {
		return nil, nil, err
	}
	return vs, mv, nil
}

// keylessExportFlags are bundle export's keyless flags.
type keylessExportFlags struct {
	keyless                   bool
	fulcio, tsa, rekor, token string
}

// MaxIDToken bounds an OIDC token file.
const maxIDToken = 64 << 10

func (f *keylessExportFlags) register(c *cobra.Command) {
	f.registerPrefixed(c, "", "the bundle")
}

// registerPrefixed registers the keyless signing flags with names
// starting with prefix ("vsa-" for bundle verify's summary), for what.
func (f *keylessExportFlags) registerPrefixed(c *cobra.Command, prefix, what string) {
	fl := c.Flags()
	fl.BoolVar(&f.keyless, prefix+"keyless", false, "sign "+what+" keyless: an ephemeral key, a Fulcio certificate for the OIDC token, an RFC 3161 timestamp (no --"+prefix+"key)")
	fl.StringVar(&f.fulcio, prefix+"fulcio-url", "", "keyless: Fulcio URL (default "+sigstore.DefaultFulcioURL+")")
	fl.StringVar(&f.tsa, prefix+"tsa-url", "", "keyless: RFC 3161 timestamp authority URL (default "+sigstore.DefaultTSAURL+")")
	fl.StringVar(&f.rekor, prefix+"rekor-url", "", "keyless: Rekor URL for a transparency log entry (default none)")
	fl.StringVar(&f.token, prefix+"id-token-file", "", "keyless: file holding the OIDC token (audience sigstore); default $SIGSTORE_ID_TOKEN")
}

// check refuses keyless flags without --keyless, --keyless with --key,
// and --keyless without a token.
func (f *keylessExportFlags) check(changed func(string) bool, keyRef string) error {
	return f.checkPrefixed(changed, keyRef, "")
}

// checkPrefixed is check for the flags registerPrefixed named with prefix;
// changed takes the name without it.
func (f *keylessExportFlags) checkPrefixed(changed func(string) bool, keyRef, prefix string) error {
	for _, name := range []string{"fulcio-url", "tsa-url", "rekor-url", "id-token-file"} {
		if changed(name) && !f.keyless {
			return usageErr(fmt.Errorf("--%s%s needs --%skeyless", prefix, name, prefix))
		}
	}
	if !f.keyless {
		return nil
	}
	if keyRef != "" {
		return usageErr(fmt.Errorf("give one of --%skey and --%skeyless: a keyless signature is made by an ephemeral key", prefix, prefix))
	}
	if f.token == "" && os.Getenv("SIGSTORE_ID_TOKEN") == "" {
		return usageErr(fmt.Errorf("--%skeyless needs an OIDC token: --%sid-token-file FILE or $SIGSTORE_ID_TOKEN", prefix, prefix))
	}
	return nil
}

// signers checks the flags and returns the key signer --key names or,
// with --keyless, the keyless signer.
func (f *keylessExportFlags) signers(changed func(string) bool, keyRef string) (envelope.Signer, envelope.MaterialSigner, error) {
	if err := f.check(changed, keyRef); err != nil {
		return nil, nil, err
	}
	if f.keyless {
		ms, err := f.signer()
		return nil, ms, err
	}
	s, err := loadSigner(keyRef)
	return s, nil, err
}

// signer returns the keyless signer the flags describe.
func (f *keylessExportFlags) signer() (envelope.MaterialSigner, error) {
	return f.signerPrefixed("")
}

// signerPrefixed is signer for the flags registerPrefixed named with prefix.
func (f *keylessExportFlags) signerPrefixed(prefix string) (envelope.MaterialSigner, error) {
	tok := os.Getenv("SIGSTORE_ID_TOKEN")
	if f.token != "" {
		b, err := readBounded(f.token, maxIDToken)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--%sid-token-file: %w", prefix, err))
		}
		tok = strings.TrimSpace(string(b))
	}
	if tok == "" {
		return nil, usageErr(fmt.Errorf("--%skeyless: the OIDC token is empty", prefix))
	}
	opts := sigstore.KeylessOptions{FulcioURL: orDefault(f.fulcio, sigstore.DefaultFulcioURL),
		TSAURL: orDefault(f.tsa, sigstore.DefaultTSAURL), RekorURL: f.rekor, IDToken: tok}
	s, err := sigstore.NewKeylessSigner(opts)
	if err != nil {
		return nil, envErr(fmt.Errorf("keyless signer: %w", err))
	}
	return s, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func readBounded(p string, max int64) ([]byte, error) {
	return bounded.ReadFile(p, max)
}
