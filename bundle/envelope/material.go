package envelope

import (
	"context"
	"time"
)

// MaterialFile is the archive member that carries an envelope's
// verification material when the signer's key is vouched for by that
// material (a Sigstore bundle: a short-lived certificate and witnessed
// times) rather than held by the verifier. Key-signed bundles have none.
const MaterialFile = "attestation.sigstore.json"

// KeylessPrefix starts the keyid of an envelope signed by a
// MaterialSigner: "keyless:" and the lowercase hex SHA-256 of the
// ephemeral public key's DER SubjectPublicKeyInfo. It never collides with
// a trust store key id (64 hex digits, no prefix).
const KeylessPrefix = "keyless:"

// MaxMaterialSignature bounds the signature of a keyless envelope (an
// ASN.1 DER ECDSA signature; P-256 needs at most 72 bytes).
const MaxMaterialSignature = 512

// MaterialSigner signs whole envelopes and returns, with the signature,
// the verification material that vouches for its key. Its KeyID starts
// with KeylessPrefix and is known before signing (the payload names it).
type MaterialSigner interface {
	KeyID() string
	// SignEnvelope signs PAE(payloadType, payload) and returns the
	// signature and the material, which must carry the same envelope.
	SignEnvelope(ctx context.Context, payloadType string, payload []byte) (sig, material []byte, err error)
}

// MaterialVerifiers finds the key that verification material vouches
// for, once the material checks against its trusted roots (certificate
// authorities, timestamp authorities, transparency logs) and an identity
// policy.
type MaterialVerifiers interface {
	// VerifierFor checks material and returns the key it vouches for,
	// whose KeyID is keyID. env is the archive's envelope, which the
	// material must carry exactly (payload type, payload, signature).
	VerifierFor(keyID string, env, material []byte) (WitnessedKey, error)
}

// WitnessedKey is a TrustedKey whose signature a witness the signer does
// not control has timed: a keyless signature's time is the witness's,
// never the signed_at the payload asserts.
type WitnessedKey interface {
	TrustedKey
	// WitnessedAt is the earliest time a witness (an RFC 3161 timestamp
	// authority, a transparency log) attests the signature existed.
	WitnessedAt() time.Time
	// Signer names the identity that signed (for a GitHub certificate,
	// the workflow at its ref), for reports.
	Signer() string
}
