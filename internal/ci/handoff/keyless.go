package handoff

// The keyless hand-off (ADR 0018, "Keyless"): the earlier job signs the
// statement with the same keyless signer as bundles (KeylessSign); the
// later job verifies it against a Sigstore trusted root and pins the
// certificate to its own identity, read from its own OIDC token
// (JobClaims.Identity): the same repository, the same job workflow file at
// the same ref (job_workflow_ref), the same source ref and the same commit
// (sha). On pull_request events GitHub runs the workflow file of the PR's
// merge ref, so no base-branch-controlled identity exists for the signer;
// pinning to the review job's own identity means the hand-off was signed
// by exactly the workflow that would otherwise re-run the checks and signs
// the bundle, under the identity a release gate pins: the fast path adds
// no signer the bundle itself would not have. Which root the job trusts
// and reading its token are the action's (internal/ci/action,
// handoff_keyless.go).

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Reasons of a refused keyless hand-off.
const (
	NoTrustedRoot Reason = "no-trusted-root"  // keyless, and no input trusted-root in the base commit
	NoIdentity    Reason = "no-job-identity"  // the review job could not read its own OIDC identity
	SignerID      Reason = "signer-identity"  // the certificate names another workflow, ref, commit or repository
	Untrusted     Reason = "signer-untrusted" // certificate or timestamp not from the trusted root
)

// maxIDToken bounds the job's own OIDC token.
const maxIDToken = 64 << 10

// JobClaims are the claims of the job's own OIDC token that pin the
// hand-off's signer.
type JobClaims struct {
	Issuer         string `json:"iss"`
	Repository     string `json:"repository"`
	Ref            string `json:"ref"`
	SHA            string `json:"sha"`
	JobWorkflowRef string `json:"job_workflow_ref"`
}

// Identity is the Sigstore identity, called name, that c pins a
// certificate to: c's issuer, job workflow file at its ref, source
// repository, ref and commit.
func (c *JobClaims) Identity(name string) sigstore.Identity {
	return sigstore.Identity{Name: name, Issuer: c.Issuer, SignerWorkflow: c.JobWorkflowRef,
		SourceRepo: c.Repository, SourceRef: c.Ref, SourceDigest: c.SHA}
}

// DecodeClaims decodes a compact JWT's payload and requires every pinning
// claim. It does not verify the token: it comes straight from the runner,
// and it only narrows which certificate is accepted.
func DecodeClaims(tok string) (*JobClaims, error) {
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
	var c JobClaims
	if err := strictjson.DecodeOpen(raw, &c); err != nil {
		return nil, fmt.Errorf("the OIDC token's claims: %w", err)
	}
	if c.Issuer == "" || c.Repository == "" || c.Ref == "" || c.SHA == "" || c.JobWorkflowRef == "" {
		return nil, errors.New("the OIDC token lacks iss, repository, ref, sha or job_workflow_ref")
	}
	return &c, nil
}

// openKeyless verifies a keyless hand-off envelope and its material, and
// returns the payload and the key the material vouches for.
func openKeyless(att, material []byte, v *sigstore.Verifiers) ([]byte, envelope.WitnessedKey, error) {
	if material == nil {
		return nil, nil, Refuse(Malformed, "a keyless hand-off without %s", envelope.MaterialFile)
	}
	payload, k, err := envelope.OpenWithMaterial(att, bundle.PayloadType, bundle.AttestationFile, material, v)
	if err != nil {
		return nil, nil, keylessRefusal(err)
	}
	return payload, k, nil
}

// CheckKeylessTime checks the witnessed key at the predicate's signed_at
// for the run's repository.
func CheckKeylessTime(k envelope.WitnessedKey, keyID, signedAt, repo string) error {
	if keyID != k.KeyID() {
		return Refuse(Malformed, "predicate key_id %s is not the signature's keyid", printable.ClipQuoted(keyID))
	}
	at, err := time.Parse(time.RFC3339Nano, signedAt)
	if err != nil {
		return Refuse(Malformed, "predicate signed_at: %v", err)
	}
	if err := k.CheckAt(at, "repo:"+repo); err != nil {
		return keylessRefusal(err)
	}
	return nil
}

// keylessRefusal maps a keyless verification error to a hand-off reason.
func keylessRefusal(err error) *Error {
	var ve *sigstore.VerifyError
	if errors.As(err, &ve) {
		switch ve.Reason {
		case sigstore.IdentityMismatch:
			return Refuse(SignerID, "%v", err)
		case sigstore.CertificateInvalid, sigstore.TimestampInvalid, sigstore.TlogInvalid:
			return Refuse(Untrusted, "%v", err)
		case sigstore.Malformed:
			return Refuse(Malformed, "%v", err)
		}
	}
	return Refuse(BadSignature, "%v", err)
}
