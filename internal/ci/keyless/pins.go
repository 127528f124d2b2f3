package keyless

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/event"
)

// signerWorkflow is the shape of a pinned signer workflow:
// OWNER/REPO/.github/workflows/FILE.yml, optionally @REF.
var signerWorkflow = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/\.github/workflows/[A-Za-z0-9_.-]+\.ya?ml(@[^\s@]+)?$`)

// Pins are the verify action's inputs of keyless verification, by input
// name: trusted-root, certificate-oidc-issuer, signer-workflow,
// source-repo and source-ref.
type Pins struct {
	TrustedRoot, Issuer, SignerWorkflow, SourceRepo, SourceRef string
}

// Identity checks the pins and returns the identity policy they pin, or
// nil without a trusted root (key-signed bundles only) or without a
// signer workflow (then only the trust store's identities pin the
// signer). Issuer, source repository or ref without a signer workflow are
// refused: such an identity would accept a bundle signed by any workflow
// Fulcio certified a token of. Its errors name the inputs.
func (p Pins) Identity() (*sigstore.Identity, error) {
	pins := p.Issuer != "" || p.SignerWorkflow != "" || p.SourceRepo != "" || p.SourceRef != ""
	if p.TrustedRoot == "" {
		if pins {
			return nil, errors.New("inputs certificate-oidc-issuer, signer-workflow, source-repo and source-ref pin a keyless signer, and need input trusted-root (the Sigstore trusted_root.json to verify it against)")
		}
		return nil, nil
	}
	if !event.CleanRel(p.TrustedRoot) {
		return nil, fmt.Errorf("input trusted-root: %q is not a clean path relative to the repository root", p.TrustedRoot)
	}
	if p.SignerWorkflow == "" {
		if p.Issuer != "" || p.SourceRepo != "" || p.SourceRef != "" {
			return nil, errors.New("inputs certificate-oidc-issuer, source-repo and source-ref narrow input signer-workflow, which is empty: an unpinned identity (no workflow) would accept a bundle signed by any workflow; pin it, e.g. OWNER/proofgate/.github/workflows/proofgate.yml@<full sha>")
		}
		return nil, nil // the trust store's identities, if any
	}
	if err := p.checkNarrowing(); err != nil {
		return nil, err
	}
	return &sigstore.Identity{Name: "verify inputs", Issuer: p.Issuer, SignerWorkflow: p.SignerWorkflow,
		SourceRepo: p.SourceRepo, SourceRef: p.SourceRef}, nil
}

// checkNarrowing checks the shape of the signer workflow and of what
// narrows it.
func (p Pins) checkNarrowing() error {
	if strings.Contains(p.SignerWorkflow, "://") || !signerWorkflow.MatchString(p.SignerWorkflow) {
		return fmt.Errorf("input signer-workflow: %q is not OWNER/REPO/.github/workflows/FILE.yml[@REF] (no https://HOST/ prefix)", p.SignerWorkflow)
	}
	if p.SourceRepo != "" && !ownerRepo(p.SourceRepo) {
		return fmt.Errorf("input source-repo: %q is not OWNER/REPO", p.SourceRepo)
	}
	if p.SourceRef != "" && !strings.HasPrefix(p.SourceRef, "refs/") {
		return fmt.Errorf("input source-ref: %q is not a full ref (refs/heads/..., refs/tags/...)", p.SourceRef)
	}
	if p.Issuer != "" {
		if err := CheckServiceURL(p.Issuer); err != nil {
			return fmt.Errorf("input certificate-oidc-issuer: %v", err)
		}
	}
	return nil
}

// ownerRepo reports whether full is OWNER/REPO.
func ownerRepo(full string) bool {
	_, _, ok := event.SplitRepo(full)
	return ok
}
