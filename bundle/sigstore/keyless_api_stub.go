package sigstore

// This file is a placeholder for the keyless API of docs (API.md) that the
// helper "keyless" implements; it exists only so that code written against
// that API compiles. It is deleted at merge.

import (
	"context"
	"errors"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
)

// Defaults of the keyless services (the public-good instances).
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultTSAURL    = "https://timestamp.sigstore.dev/api/v1/timestamp"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
	DefaultIssuer    = "https://token.actions.githubusercontent.com"
)

// MaxSigningDelay bounds how long before its witnessed time a keyless
// signature's signed_at may lie.
const MaxSigningDelay = 10 * time.Minute

// KeylessOptions configure a keyless signer.
type KeylessOptions struct {
	FulcioURL string
	TSAURL    string
	RekorURL  string
	IDToken   string
	Timeout   time.Duration
}

// KeylessSigner is an envelope.MaterialSigner with an ephemeral key.
type KeylessSigner struct{}

var errNotImplemented = errors.New("not implemented")

// NewKeylessSigner is not implemented in this placeholder.
func NewKeylessSigner(opts KeylessOptions) (*KeylessSigner, error) {
	return nil, errNotImplemented
}

// KeyID is not implemented in this placeholder.
func (s *KeylessSigner) KeyID() string { return "" }

// SignEnvelope is not implemented in this placeholder.
func (s *KeylessSigner) SignEnvelope(ctx context.Context, payloadType string, payload []byte) (sig, material []byte, err error) {
	return nil, nil, errNotImplemented
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

// Verifiers verifies keyless material.
type Verifiers struct{}

// NewVerifiers is not implemented in this placeholder.
func NewVerifiers(trustedRoot []byte, ids []Identity) (*Verifiers, error) {
	return nil, errNotImplemented
}

// LoadVerifiers is not implemented in this placeholder.
func LoadVerifiers(trustedRootPath string, ids []Identity) (*Verifiers, error) {
	return nil, errNotImplemented
}

// VerifierFor is not implemented in this placeholder.
func (v *Verifiers) VerifierFor(keyID string, env, material []byte) (envelope.WitnessedKey, error) {
	return nil, errNotImplemented
}

// VerifyError is a refused keyless material.
type VerifyError struct {
	Reason Reason
	Detail string
	Err    error
}

func (e *VerifyError) Error() string {
	return "keyless material refused: " + string(e.Reason) + ": " + e.Detail
}

// Reason is the typed cause of a VerifyError.
type Reason string

// Refusal reasons of keyless material.
const (
	Malformed              Reason = "malformed"
	MaterialMismatch       Reason = "material-mismatch"
	CertificateInvalid     Reason = "certificate-invalid"
	TimestampInvalid       Reason = "timestamp-invalid"
	TlogInvalid            Reason = "tlog-invalid"
	IdentityMismatch       Reason = "identity-mismatch"
	SigningTimeImplausible Reason = "signing-time-implausible"
)

var (
	_ envelope.MaterialSigner    = (*KeylessSigner)(nil)
	_ envelope.MaterialVerifiers = (*Verifiers)(nil)
)
