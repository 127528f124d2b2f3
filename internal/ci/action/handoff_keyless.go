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
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Reasons of a refused keyless hand-off.
const (
	FastNoTrustedRoot FastPathReason = "no-trusted-root"  // keyless, and no input trusted-root in the base commit
	FastNoIdentity    FastPathReason = "no-job-identity"  // the review job could not read its own OIDC identity
	FastSignerID      FastPathReason = "signer-identity"  // the certificate names another workflow, ref, commit or repository
	FastUntrusted     FastPathReason = "signer-untrusted" // certificate or timestamp not from the trusted root
)

// maxIDToken bounds the review job's own OIDC token.
const maxIDToken = 64 << 10

// jobClaims are the claims of the job's own OIDC token that pin the
// hand-off's signer.
type jobClaims struct {
	Issuer         string `json:"iss"`
	Repository     string `json:"repository"`
	Ref            string `json:"ref"`
	SHA            string `json:"sha"`
	JobWorkflowRef string `json:"job_workflow_ref"`
}

// handoffSigner returns the hand-off's key id and sign function: the
// job's key, or (keyless) an ephemeral key Fulcio certifies for the job's
// OIDC token, whose material goes into the archive.
func (j *job) handoffSigner(ctx context.Context) (string, func([]byte) ([]byte, []byte, error), error) {
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
		return nil, refuse(FastNoTrustedRoot, "a keyless hand-off is verified against the Sigstore trusted root at input trusted-root, which is empty")
	}
	root, err := event.ContractAt(ctx, j.ws, j.gh, j.owner, j.name, j.ev.BaseSHA, path)
	if err != nil {
		return nil, refuse(FastNoTrustedRoot, "trusted root %s at base %s: %v", path, short(j.ev.BaseSHA), err)
	}
	c, err := j.ownClaims(ctx)
	if err != nil {
		return nil, refuse(FastNoIdentity, "%v", err)
	}
	id := sigstore.Identity{Name: "the review job's identity", Issuer: c.Issuer, SignerWorkflow: c.JobWorkflowRef,
		SourceRepo: c.Repository, SourceRef: c.Ref, SourceDigest: c.SHA}
	v, err := sigstore.NewVerifiers(root, []sigstore.Identity{id})
	if err != nil {
		return nil, refuse(FastNoTrustedRoot, "%s: %v", path, err)
	}
	return v, nil
}

// ownClaims reads the review job's own OIDC token from the runner. It is
// not verified: it comes straight from the runner's endpoint, and it only
// narrows which certificate is accepted.
func (j *job) ownClaims(ctx context.Context) (*jobClaims, error) {
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
	return decodeClaims(tok)
}

// decodeClaims decodes a compact JWT's payload and requires every pinning
// claim.
func decodeClaims(tok string) (*jobClaims, error) {
	if len(tok) > maxIDToken {
		return nil, fmt.Errorf("the OIDC token is %d bytes, over %d", len(tok), maxIDToken)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, errors.New("the OIDC token is not a compact JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("the OIDC token's payload: %w", err)
	}
	var c jobClaims
	if err := strictjson.DecodeOpen(raw, &c); err != nil {
		return nil, fmt.Errorf("the OIDC token's claims: %w", err)
	}
	if c.Issuer == "" || c.Repository == "" || c.Ref == "" || c.SHA == "" || c.JobWorkflowRef == "" {
		return nil, errors.New("the OIDC token lacks iss, repository, ref, sha or job_workflow_ref")
	}
	return &c, nil
}

// openKeyless verifies a keyless hand-off envelope and its material, and
// checks the certificate at the statement's signing time for the run's
// repository.
func openKeyless(att, material []byte, v *sigstore.Verifiers) ([]byte, envelope.WitnessedKey, error) {
	if material == nil {
		return nil, nil, refuse(FastMalformed, "a keyless hand-off without %s", envelope.MaterialFile)
	}
	payload, k, err := envelope.OpenWithMaterial(att, bundle.PayloadType, bundle.AttestationFile, material, v)
	if err != nil {
		return nil, nil, keylessRefusal(err)
	}
	return payload, k, nil
}

// checkKeylessTime checks the witnessed key at the predicate's signed_at
// for the run's repository.
func checkKeylessTime(k envelope.WitnessedKey, keyID, signedAt, repo string) error {
	if keyID != k.KeyID() {
		return refuse(FastMalformed, "predicate key_id %s is not the signature's keyid", clipID(keyID))
	}
	at, err := time.Parse(time.RFC3339Nano, signedAt)
	if err != nil {
		return refuse(FastMalformed, "predicate signed_at: %v", err)
	}
	if err := k.CheckAt(at, "repo:"+repo); err != nil {
		return keylessRefusal(err)
	}
	return nil
}

// keylessRefusal maps a keyless verification error to a fast-path reason.
func keylessRefusal(err error) *FastPathError {
	var ve *sigstore.VerifyError
	if errors.As(err, &ve) {
		switch ve.Reason {
		case sigstore.IdentityMismatch:
			return refuse(FastSignerID, "%v", err)
		case sigstore.CertificateInvalid, sigstore.TimestampInvalid, sigstore.TlogInvalid:
			return refuse(FastUntrusted, "%v", err)
		case sigstore.Malformed:
			return refuse(FastMalformed, "%v", err)
		}
	}
	return refuse(FastBadSignature, "%v", err)
}
