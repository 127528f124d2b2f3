package action

// The keyless run hand-off (ADR 0018, "Keyless"): the pull_request job
// signs the hand-off statement with the same KeylessSigner as bundles; the
// review job verifies it against the Sigstore trusted root at input
// trusted-root read from the base commit (a PR cannot swap it) and pins
// the certificate to its own identity, read from its own OIDC token: the
// same repository, the same job workflow file at the same ref
// (job_workflow_ref), the same source ref and the same commit (sha). On
// pull_request events GitHub runs the workflow file of the PR's merge ref,
// so no base-branch-controlled identity exists for the signer; pinning to
// the review job's own identity means the hand-off was signed by exactly
// the workflow that would otherwise re-run the checks and signs the bundle,
// under the identity a release gate pins: the fast path adds no signer the
// bundle itself would not have.

import (
	"context"
	"fmt"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/handoff"
)

// handoffSigner returns the hand-off's key id and sign function: the
// job's key, or (keyless) an ephemeral key Fulcio certifies for the job's
// OIDC token, whose material goes into the archive.
func (j *job) handoffSigner(ctx context.Context) (string, handoff.SignFunc, error) {
	if !j.keyless {
		s := j.signer
		return s.KeyID(), func(p []byte) ([]byte, []byte, error) {
			env, err := envelope.SignContext(ctx, s, bundle.PayloadType, p)
			return env, nil, err
		}, nil
	}
	ms, err := j.keylessSigner(ctx)
	if err != nil {
		return "", nil, err
	}
	return ms.KeyID(), func(p []byte) ([]byte, []byte, error) {
		return envelope.SignWithMaterial(ctx, ms, bundle.PayloadType, p)
	}, nil
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
		return nil, handoff.Refuse(handoff.NoTrustedRoot, "trusted root %s at base %s: %v", path, short(j.ev.BaseSHA), err)
	}
	c, err := j.ownClaims(ctx)
	if err != nil {
		return nil, handoff.Refuse(handoff.NoIdentity, "%v", err)
	}
	id := sigstore.Identity{Name: "the review job's identity", Issuer: c.Issuer, SignerWorkflow: c.JobWorkflowRef,
		SourceRepo: c.Repository, SourceRef: c.Ref, SourceDigest: c.SHA}
	v, err := sigstore.NewVerifiers(root, []sigstore.Identity{id})
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
