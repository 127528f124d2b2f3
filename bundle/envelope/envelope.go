// Package envelope signs and verifies the DSSE envelopes of evidence bundles
// and checkpoints through sigstore, with one Ed25519 signature whose keyid
// is the ProofGate key id, and parses untrusted envelopes strictly.
package envelope

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/kernel/canon"
	"github.com/proofgate/proofgate/kernel/strictjson"
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

// Sign signs payload with s through sigstore's DSSE signer and
// returns the envelope as canonical JSON.
func Sign(s *key.Signer, payloadType string, payload []byte) ([]byte, error) {
	raw, err := sigdsse.WrapSigner(s.Signer, payloadType).SignMessage(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	var env Envelope
	if err := strictjson.Decode(raw, &env); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if len(env.Signatures) != 1 || env.PayloadType != payloadType || env.Payload != base64.StdEncoding.EncodeToString(payload) {
		return nil, fmt.Errorf("sign: unexpected envelope from the signer")
	}
	env.Signatures[0].KeyID = s.ID
	return canon.Marshal(&env)
}

// Parse strictly decodes an envelope: known fields only, exactly
// one signature, the expected payload type, strict standard base64. It
// returns the raw payload bytes. Nothing in the payload is trusted yet.
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
	sig, err := base64.StdEncoding.Strict().DecodeString(env.Signatures[0].Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, nil, fmt.Errorf("%s: signatures[0].sig: not a base64 Ed25519 signature", name)
	}
	return &env, payload, nil
}

// Verify checks env's signature over PAE(payloadType, payload)
// with pub, through sigstore's DSSE verifier.
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
