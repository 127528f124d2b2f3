package action

// The verify step's keyless side: identity inputs pin which workflow a
// keyless bundle's certificate must name, a Sigstore trusted root (read
// offline from the workspace) says which Fulcio CAs and timestamp
// authorities to trust. The gate (internal/ci/gate) verifies with them and
// checks the companion Sigstore bundle.

import (
	"time"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/ci/keyless"
)

// readIdentityInputs reads the verify inputs of keyless verification.
func readIdentityInputs(input func(string) string) keyless.Pins {
	return keyless.Pins{TrustedRoot: input("trusted-root"), Issuer: input("certificate-oidc-issuer"),
		SignerWorkflow: input("signer-workflow"), SourceRepo: input("source-repo"), SourceRef: input("source-ref")}
}

// loadTrust loads the trust store and, with input trusted-root, the
// keyless verifiers. With a trusted root, a missing trust store is an
// empty one (keyless bundles need no keys).
func (g *verifyJob) loadTrust() *gate.Refusal {
	id, err := g.ids.Identity()
	if err != nil {
		return gate.Usage("%s", err)
	}
	if g.ids.TrustedRoot == "" {
		if g.store, err = trust.Load(g.abs(g.in.trustStore)); err != nil {
			return gate.Usage("input trust-store: %v", err)
		}
		return nil
	}
	if g.store, err = trust.LoadOrNew(g.abs(g.in.trustStore)); err != nil {
		return gate.Usage("input trust-store: %v", err)
	}
	var ids []sigstore.Identity
	if id != nil {
		ids = append(ids, *id)
	}
	ids = append(ids, sigstore.TrustIdentities(g.store)...)
	if len(ids) == 0 {
		return gate.Usage("input trusted-root is set but nothing pins the signer: set signer-workflow (e.g. OWNER/proofgate/.github/workflows/proofgate.yml@<full sha>) or add identities to the trust store (proofgate trust add-identity); an unpinned identity would accept a bundle signed by any workflow of any repository")
	}
	mv, err := sigstore.LoadVerifiers(g.abs(g.ids.TrustedRoot), ids)
	if err != nil {
		return gate.Usage("input trusted-root: %v", err)
	}
	g.mv = mv
	return nil
}

// witnessedText formats a witnessed time for the summary.
func witnessedText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
