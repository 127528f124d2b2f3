package envelope

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/proofgate/proofgate/internal/canon"
)

// MaterialRefused is the Reason Open refuses a keyless envelope for when
// its MaterialVerifiers refuse the verification material; Error.Err is
// their error, whose classification is the caller's.
const MaterialRefused Reason = "material-refused"

// Keyless reports whether keyID is a keyless keyid: KeylessPrefix and 64
// lowercase hex digits.
func Keyless(keyID string) bool {
	return strings.HasPrefix(keyID, KeylessPrefix) && isHex64(keyID[len(KeylessPrefix):])
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// SignWithMaterial signs PAE(payloadType, payload) with s and returns the
// envelope as canonical JSON, its keyid s.KeyID(), and the verification
// material s returned. The keyid must be keyless and the signature of 1
// to MaxMaterialSignature bytes, or nothing is returned.
func SignWithMaterial(ctx context.Context, s MaterialSigner, payloadType string, payload []byte) (env, material []byte, err error) {
	id := s.KeyID()
	if !Keyless(id) {
		return nil, nil, fmt.Errorf("sign: keyid %q is not %s and 64 lowercase hex", clip(id), KeylessPrefix)
	}
	sig, material, err := s.SignEnvelope(ctx, payloadType, payload)
	if err != nil {
		return nil, nil, fmt.Errorf("sign: %w", err)
	}
	if len(sig) == 0 || len(sig) > MaxMaterialSignature {
		return nil, nil, fmt.Errorf("sign: a %d-byte signature, want 1 to %d", len(sig), MaxMaterialSignature)
	}
	if len(material) == 0 {
		return nil, nil, fmt.Errorf("sign: the signer returned no verification material")
	}
	e := Envelope{PayloadType: payloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{{KeyID: id, Sig: base64.StdEncoding.EncodeToString(sig)}}}
	env, err = canon.Marshal(&e)
	if err != nil {
		return nil, nil, err
	}
	return env, material, nil
}

// OpenWithMaterial verifies the keyless envelope b with the key its
// verification material vouches for and returns the payload and that
// key: Parse (Malformed; a keyid that is not keyless is Malformed too),
// mv's verdict on the material (MaterialRefused, its error in Err; a key
// with another keyid is UnknownKey), the signature over PAE of the exact
// payload bytes (SignatureInvalid), each refusal an *Error. As with Open,
// the key's CheckAt and CheckWitnessed are the caller's, once the payload
// is authenticated.
func OpenWithMaterial(b []byte, payloadType, name string, material []byte, mv MaterialVerifiers) ([]byte, WitnessedKey, error) {
	env, payload, err := Parse(b, payloadType, name)
	if err != nil {
		return nil, nil, &Error{Reason: Malformed, Name: name, Err: err}
	}
	id := env.Signatures[0].KeyID
	if !Keyless(id) {
		return nil, nil, &Error{Reason: Malformed, Name: name, KeyID: id,
			Err: fmt.Errorf("%s: keyid %q is not keyless: it needs no verification material", name, clip(id))}
	}
	k, err := mv.VerifierFor(id, b, material)
	if err != nil {
		return nil, nil, &Error{Reason: MaterialRefused, Name: name, KeyID: id, Err: err}
	}
	if k == nil || k.KeyID() != id {
		return nil, nil, &Error{Reason: UnknownKey, Name: name, KeyID: id, Err: fmt.Errorf("the material verifiers returned another key")}
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(env.Signatures[0].Sig)
	if err != nil || !k.Verify(PAE(env.PayloadType, payload), sig) {
		return nil, nil, &Error{Reason: SignatureInvalid, Name: name, KeyID: id}
	}
	return payload, k, nil
}
