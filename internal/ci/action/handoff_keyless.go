package action

// The keyless run hand-off (ADR 0018, "Keyless"; internal/ci/handoff's
// keyless.go says why the review job pins its own identity): the review
// job verifies it against the Sigstore trusted root at input trusted-root
// read from the base commit (a PR cannot swap it) and its own identity,
// read from its own OIDC token.

import (
	"context"
	"fmt"
	"strings"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/handoff"
)

// handoffSigner returns the hand-off's key id and sign function: the
// job's key, or (keyless) an ephemeral key Fulcio certifies for the job's
// OIDC token, whose material goes into the archive.
func (j *job) handoffSigner(ctx context.Context) (string, handoff.SignFunc, error) {
	if !j.keyless {
		return j.signer.KeyID(), handoff.KeySign(ctx, j.signer), nil
	}
	ms, err := j.keylessSigner(ctx)
	if err != nil {
		return "", nil, err
	}
	return ms.KeyID(), handoff.KeylessSign(ctx, ms), nil
}

// keylessVerifiers returns the verifier of a keyless hand-off: the trusted
// root of the base commit and the review job's own identity.
func (j *job) keylessVerifiers(ctx context.Context) (*sigstore.Verifiers, error) {
	path := j.in.trustedRoot
	if path == "" {
		return nil, handoff.Refuse(handoff.NoTrustedRoot, "a keyless hand-off is verified against the Sigstore trusted root at input trusted-root, which is empty")
	}
	root, err := event.ContractAt(ctx, j.ws, j.gh, j.owner, j.name, j.ev.BaseSHA, path)
	if err != nil {
		return nil, handoff.Refuse(handoff.NoTrustedRoot, "trusted root %s at base %s: %v", path, event.ShortSHA(j.ev.BaseSHA), err)
	}
	c, err := j.ownClaims(ctx)
	if err != nil {
		return nil, handoff.Refuse(handoff.NoIdentity, "%v", err)
	}
	v, err := sigstore.NewVerifiers(root, []sigstore.Identity{c.Identity("the review job's identity")})
	if err != nil {
		return nil, handoff.Refuse(handoff.NoTrustedRoot, "%s: %v", path, err)
	}
	return v, nil
}

// ownClaims reads the review job's own OIDC token from the runner. It is
// not verified: it comes straight from the runner's endpoint, and it only
// narrows which certificate is accepted.
func (j *job) ownClaims(ctx context.Context) (*handoff.JobClaims, error) {
	if j.o.Getenv(idTokenURLEnv) == "" || j.o.Getenv(idTokenTokenEnv) == "" {
		return nil, errNoIDToken
	}
	tctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	tok, err := j.f.a.GetIDToken(tctx, OIDCAudience)
	if err != nil {
		return nil, fmt.Errorf("get the OIDC token: %w", err)
	}
	tok = strings.TrimSpace(tok)
	j.f.mask(tok)
	return handoff.DecodeClaims(tok)
}
