package sigstore

// TEMPORARY: the keyless API of API.md, so that the integ branch compiles
// before helper "keyless" merges bundle/sigstore's implementation. Every
// function returns errors.New("not implemented"). Delete this file at
// merge.

import (
	"context"
	"errors"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
)

// Default service URLs and issuer.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultTSAURL    = "https://timestamp.sigstore.dev/api/v1/timestamp"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
	DefaultIssuer    = "https://token.actions.githubusercontent.com"
)

// KeylessOptions configure a keyless signer.
type KeylessOptions struct {
	FulcioURL string
	TSAURL    string
	RekorURL  string
	IDToken   string
	Timeout   time.Duration
}

// KeylessSigner is a keyless envelope.MaterialSigner.
type KeylessSigner struct{}

// NewKeylessSigner is not implemented in this stub.
func NewKeylessSigner(opts KeylessOptions) (*KeylessSigner, error) {
	return nil, errors.New("not implemented")
}

// KeyID is not implemented in this stub.
func (s *KeylessSigner) KeyID() string { return "" }

// SignEnvelope is not implemented in this stub.
func (s *KeylessSigner) SignEnvelope(ctx context.Context, payloadType string, payload []byte) ([]byte, []byte, error) {
	return nil, nil, errors.New("not implemented")
}

// Identity is one identity policy a certificate may match.
type Identity struct {
	Name           string
	Issuer         string
	SignerWorkflow string
	SourceRepo     string
	SourceRef      string
	Valid          func(witnessed time.Time) error
}

// Verifiers verify keyless material.
type Verifiers struct{}

// NewVerifiers is not implemented in this stub.
func NewVerifiers(trustedRoot []byte, ids []Identity) (*Verifiers, error) {
	return nil, errors.New("not implemented")
}

// LoadVerifiers is not implemented in this stub.
func LoadVerifiers(trustedRootPath string, ids []Identity) (*Verifiers, error) {
	return nil, errors.New("not implemented")
}

// VerifierFor is not implemented in this stub.
func (v *Verifiers) VerifierFor(keyID string, env, material []byte) (envelope.WitnessedKey, error) {
	return nil, errors.New("not implemented")
}

// VerifyError is a refused keyless material.
type VerifyError struct {
	Reason Reason
	Detail string
	Err    error
}

func (e *VerifyError) Error() string {
	return "keyless material: " + string(e.Reason) + ": " + e.Detail
}

// Reason is the typed cause of a VerifyError.
type Reason string

// Reasons.
const (
	Malformed              Reason = "malformed"
	MaterialMismatch       Reason = "material-mismatch"
	CertificateInvalid     Reason = "certificate-invalid"
	TimestampInvalid       Reason = "timestamp-invalid"
	TlogInvalid            Reason = "tlog-invalid"
	IdentityMismatch       Reason = "identity-mismatch"
	SigningTimeImplausible Reason = "signing-time-implausible"
)

// MaxSigningDelay bounds signed_at before the witnessed time.
const MaxSigningDelay = 10 * time.Minute
