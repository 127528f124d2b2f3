package sigstore

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"

	"github.com/proofgate/proofgate/bundle/envelope"
)

// The public-good Sigstore instances, the defaults of KeylessOptions.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultTSAURL    = "https://timestamp.sigstore.dev/api/v1/timestamp"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
)

// KeylessOptions configure a keyless signer.
type KeylessOptions struct {
	FulcioURL string        // default DefaultFulcioURL
	TSAURL    string        // RFC 3161 endpoint; default DefaultTSAURL; "" with NoTSA to skip
	NoTSA     bool          // no timestamp (then RekorURL must be set: a witness is required)
	RekorURL  string        // "" = no transparency log entry (the default); see DefaultRekorURL
	IDToken   string        // the OIDC token (audience "sigstore")
	Timeout   time.Duration // per service request; default 30s
}

// KeylessSigner signs one envelope with an ephemeral ECDSA P-256 key that
// Fulcio certifies for the OIDC token's identity, and has the signature
// timestamped (and, with a Rekor URL, logged). It implements
// envelope.MaterialSigner.
type KeylessSigner struct {
	opts  KeylessOptions
	keyID string

	mu      sync.Mutex
	keypair *sign.EphemeralKeypair // nil once it has signed
}

// NewKeylessSigner makes an ephemeral ECDSA P-256 keypair; KeyID() is
// envelope.KeylessPrefix + hex sha256 of its DER SPKI. Nothing is sent
// until SignEnvelope.
func NewKeylessSigner(opts KeylessOptions) (*KeylessSigner, error) {
	if opts.IDToken == "" {
		return nil, errors.New("keyless signer: no OIDC token")
	}
	if opts.FulcioURL == "" {
		opts.FulcioURL = DefaultFulcioURL
	}
	if opts.TSAURL == "" && !opts.NoTSA {
		opts.TSAURL = DefaultTSAURL
	}
	if opts.NoTSA {
		opts.TSAURL = ""
	}
	if opts.TSAURL == "" && opts.RekorURL == "" {
		return nil, errors.New("keyless signer: neither a timestamp authority nor a transparency log: nothing would witness the signature")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	kp, err := sign.NewEphemeralKeypair(&sign.EphemeralKeypairOptions{Algorithm: protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256})
	if err != nil {
		return nil, fmt.Errorf("keyless signer: %w", err)
	}
	id, err := keylessID(kp.GetPublicKey())
	if err != nil {
		return nil, fmt.Errorf("keyless signer: %w", err)
	}
	return &KeylessSigner{opts: opts, keypair: kp, keyID: id}, nil
}

// keylessID is envelope.KeylessPrefix and the hex SHA-256 of pub's DER
// SubjectPublicKeyInfo.
func keylessID(pub any) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return envelope.KeylessPrefix + hex.EncodeToString(sum[:]), nil
}

// KeyID is the envelope keyid and predicate key_id of what s signs.
func (s *KeylessSigner) KeyID() string { return s.keyID }

// SignEnvelope signs PAE(payloadType, payload) and returns the DER
// signature and the Sigstore bundle v0.3 JSON (Marshal) whose dsseEnvelope
// is the same envelope without keyid, with the Fulcio certificate, the
// RFC 3161 timestamp and, with a Rekor URL, the tlog entry (see the
// package doc). The ephemeral key signs once: a second call is refused.
func (s *KeylessSigner) SignEnvelope(ctx context.Context, payloadType string, payload []byte) (sig, material []byte, err error) {
	s.mu.Lock()
	kp := s.keypair
	s.keypair = nil
	s.mu.Unlock()
	if kp == nil {
		return nil, nil, errors.New("keyless signer: the ephemeral key has signed already")
	}
	opts := sign.BundleOptions{
		CertificateProvider:        sign.NewFulcio(&sign.FulcioOptions{BaseURL: s.opts.FulcioURL, Timeout: s.opts.Timeout}),
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: s.opts.IDToken},
		Context:                    ctx,
	}
	if s.opts.TSAURL != "" {
		opts.TimestampAuthorities = []*sign.TimestampAuthority{sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{URL: s.opts.TSAURL, Timeout: s.opts.Timeout})}
	}
	if s.opts.RekorURL != "" {
		opts.TransparencyLogs = []sign.Transparency{sign.NewRekor(&sign.RekorOptions{BaseURL: s.opts.RekorURL, Timeout: s.opts.Timeout})}
	}
	b, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: payloadType}, kp, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("keyless signer: %w", err)
	}
	env := b.GetDsseEnvelope()
	if env == nil || len(env.Signatures) != 1 || len(env.Signatures[0].Sig) > envelope.MaxMaterialSignature {
		return nil, nil, errors.New("keyless signer: sigstore-go returned no single bounded DSSE signature")
	}
	cert, err := x509.ParseCertificate(b.GetVerificationMaterial().GetCertificate().GetRawBytes())
	if err != nil {
		return nil, nil, fmt.Errorf("keyless signer: the bundle's certificate: %w", err)
	}
	if id, err := keylessID(cert.PublicKey); err != nil || id != s.keyID {
		return nil, nil, errors.New("keyless signer: the certificate is not for the ephemeral key")
	}
	material, err = Marshal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("keyless signer: %w", err)
	}
	return env.Signatures[0].Sig, material, nil
}
