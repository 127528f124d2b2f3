// Package envelope signs and opens the DSSE envelopes of evidence bundles
// and checkpoints: one signature whose keyid is the signer's key id, over
// the DSSE pre-authentication encoding (PAE) of the payload. Untrusted
// envelopes are parsed strictly.
//
// The package is the consumer of signing and verification, so the seams
// live here, in the style of golang.org/x/mod/sumdb/note: a [Signer] signs
// PAE bytes under a key id; [Verifiers] finds the [TrustedKey] for a key
// id, a [Verifier] that also knows when and for whom its key may sign.
// The trust store (bundle/trust) is one Verifiers and bundle/key's
// Ed25519 PKCS#8 signer one Signer; a keyless signer and its verifiers
// would be others. [Open] is the one verification path of bundles and
// checkpoints: parse strictly, look up the key by keyid, verify the
// signature over PAE, and only then hand out the payload. A keyless
// envelope (keyid KeylessPrefix and 64 hex) is opened by
// [OpenWithMaterial] instead, with the key its verification material
// vouches for ([MaterialVerifiers]); [SignWithMaterial] makes one.
package envelope

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
)

// MaxSize bounds a DSSE envelope file.
const MaxSize = 16 << 20

// Envelope is a DSSE envelope with exactly one signature.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"` // standard base64 with padding
	Signatures  []Signature `json:"signatures"`
}

// Signature is one DSSE signature; KeyID is the signer's key id.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"` // standard base64 of the 64-byte Ed25519 signature
}

// PAE is the DSSE v1 pre-authentication encoding, the exact bytes signed:
// "DSSEv1" SP LEN(type) SP type SP LEN(payload) SP payload, lengths in
// ASCII decimal.
func PAE(payloadType string, payload []byte) []byte {
	b := make([]byte, 0, len(payloadType)+len(payload)+32)
	b = append(b, "DSSEv1 "...)
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, ' ')
	return append(b, payload...)
}

// SignatureSize is the length of the one signature of a v1 envelope (an
// Ed25519 signature): the wire format fixes it, and Parse refuses others.
const SignatureSize = ed25519.SignatureSize

// Signer signs messages under one key id.
type Signer interface {
	// KeyID is the id verifiers look the key up by (the envelope's keyid).
	KeyID() string
	// Sign returns the signature of message (the PAE bytes).
	Sign(ctx context.Context, message []byte) ([]byte, error)
}

// Verifier checks signatures made by one key.
type Verifier interface {
	// KeyID is the id the key was looked up by.
	KeyID() string
	// Verify reports whether sig is the key's signature of message.
	Verify(message, sig []byte) bool
}

// TrustedKey is a Verifier whose trust is bounded: the key may sign only
// at some times and, when the payload names one, for some identity. Its
// refusals are the caller's to classify (a trust store's are
// *trust.KeyError).
type TrustedKey interface {
	Verifier
	// CheckAt refuses the key for a signature made at signedAt on behalf
	// of identity ("" when the payload names none).
	CheckAt(signedAt time.Time, identity string) error
	// CheckWitnessed refuses the key for a signature that a witness the
	// signer does not control first saw at at.
	CheckWitnessed(at time.Time) error
}

// Verifiers finds the trusted key for a key id.
type Verifiers interface {
	// Verifier returns the key with keyID, or an error when there is none
	// to trust (a trust store's is a *trust.KeyError, reason unknown-key).
	Verifier(keyID string) (TrustedKey, error)
}

// Reason is the typed cause of an envelope Open refused.
type Reason string

// Reasons Open refuses an envelope, in the order it checks them.
const (
	Malformed        Reason = "malformed"         // Parse refused it
	UnknownKey       Reason = "unknown-key"       // no trusted key for its keyid
	SignatureInvalid Reason = "signature-invalid" // the key does not verify it
)

// Error is an envelope Open refused.
type Error struct {
	Reason Reason
	Name   string // the envelope's label, as given to Open
	KeyID  string // the envelope's keyid (UnknownKey, SignatureInvalid)
	Err    error  // the Parse or Verifiers error
}

func (e *Error) Error() string {
	switch e.Reason {
	case Malformed:
		return e.Err.Error()
	case UnknownKey:
		return fmt.Sprintf("%s: keyid %q: %v", e.Name, clip(e.KeyID), e.Err)
	case MaterialRefused:
		return fmt.Sprintf("%s: keyid %q: verification material refused: %v", e.Name, clip(e.KeyID), e.Err)
	}
	return fmt.Sprintf("%s: the signature does not verify with key %s", e.Name, e.KeyID)
}

// Unwrap returns the Parse or Verifiers error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Sign is SignContext without a deadline.
func Sign(s Signer, payloadType string, payload []byte) ([]byte, error) {
	return SignContext(context.Background(), s, payloadType, payload)
}

// SignContext signs PAE(payloadType, payload) with s and returns the
// envelope as canonical JSON.
func SignContext(ctx context.Context, s Signer, payloadType string, payload []byte) ([]byte, error) {
	sig, err := s.Sign(ctx, PAE(payloadType, payload))
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	env := Envelope{PayloadType: payloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{{KeyID: s.KeyID(), Sig: base64.StdEncoding.EncodeToString(sig)}}}
	return canon.Marshal(&env)
}

// Open verifies envelope b and returns its payload and the key that
// signed it: Parse (Malformed), the key for its keyid from vs
// (UnknownKey), the signature over PAE of the exact payload bytes
// (SignatureInvalid), each refusal an *Error. The key's status at the
// signing time is the caller's to check (TrustedKey.CheckAt), once it has
// read the time from the now authenticated payload.
func Open(b []byte, payloadType, name string, vs Verifiers) ([]byte, TrustedKey, error) {
	env, payload, err := Parse(b, payloadType, name)
	if err != nil {
		return nil, nil, &Error{Reason: Malformed, Name: name, Err: err}
	}
	id := env.Signatures[0].KeyID
	k, err := vs.Verifier(id)
	if err == nil && (k == nil || k.KeyID() != id) {
		err = fmt.Errorf("the verifiers returned another key")
	}
	if err != nil {
		return nil, nil, &Error{Reason: UnknownKey, Name: name, KeyID: id, Err: err}
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(env.Signatures[0].Sig)
	if err != nil || !k.Verify(PAE(env.PayloadType, payload), sig) {
		return nil, nil, &Error{Reason: SignatureInvalid, Name: name, KeyID: id}
	}
	return payload, k, nil
}

// Parse strictly decodes an envelope: known fields only, exactly
// one signature, the expected payload type, strict standard base64, and a
// keyid of one of two forms: a key id (64 lowercase hex) with a 64-byte
// Ed25519 signature, or a keyless keyid (KeylessPrefix and 64 lowercase
// hex) with a signature of 1 to MaxMaterialSignature bytes. It returns the
// raw payload bytes. Nothing in the payload is trusted yet.
func Parse(b []byte, payloadType, name string) (*Envelope, []byte, error) {
	if len(b) > MaxSize {
		return nil, nil, fmt.Errorf("%s: larger than %d bytes", name, MaxSize)
	}
	var env Envelope
	if err := strictjson.Decode(b, &env); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if env.PayloadType != payloadType {
		return nil, nil, fmt.Errorf("%s: payloadType %q, want %q", name, clip(env.PayloadType), payloadType)
	}
	if len(env.Signatures) != 1 {
		return nil, nil, fmt.Errorf("%s: %d signatures, want exactly 1", name, len(env.Signatures))
	}
	payload, err := base64.StdEncoding.Strict().DecodeString(env.Payload)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: payload: not standard base64", name)
	}
	if err := checkSignature(&env.Signatures[0], name); err != nil {
		return nil, nil, err
	}
	return &env, payload, nil
}

// checkSignature requires a keyid of one of the two forms and a signature
// the form allows: a key id (64 lowercase hex) with a 64-byte Ed25519
// signature, or KeylessPrefix and 64 lowercase hex with 1 to
// MaxMaterialSignature bytes.
func checkSignature(s *Signature, name string) error {
	sig, err := base64.StdEncoding.Strict().DecodeString(s.Sig)
	switch {
	case Keyless(s.KeyID):
		if err != nil || len(sig) == 0 || len(sig) > MaxMaterialSignature {
			return fmt.Errorf("%s: signatures[0].sig: not a base64 signature of 1 to %d bytes", name, MaxMaterialSignature)
		}
	case isHex64(s.KeyID):
		if err != nil || len(sig) != SignatureSize {
			return fmt.Errorf("%s: signatures[0].sig: not a base64 Ed25519 signature", name)
		}
	default:
		return fmt.Errorf("%s: signatures[0].keyid %q: neither a key id (64 lowercase hex) nor %s and 64 lowercase hex", name, clip(s.KeyID), KeylessPrefix)
	}
	return nil
}

// Verify checks env's signature over PAE(payloadType, payload) with the
// Ed25519 key pub through sigstore's DSSE verifier: an implementation
// independent of Open's, against which tests and the SPEC vector check
// the bytes. Verification of untrusted input goes through Open.
func Verify(env *Envelope, pub ed25519.PublicKey) error {
	v, err := signature.LoadVerifier(pub, crypto.Hash(0))
	if err != nil {
		return err
	}
	// The key was chosen by keyid already; sigstore's adapter would compare
	// the keyid with its own (SSH-fingerprint) id, so hand it none.
	stripped := Envelope{PayloadType: env.PayloadType, Payload: env.Payload,
		Signatures: []Signature{{Sig: env.Signatures[0].Sig}}}
	b, err := json.Marshal(&stripped)
	if err != nil {
		return err
	}
	return sigdsse.WrapVerifier(v).VerifySignature(bytes.NewReader(b), nil)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
