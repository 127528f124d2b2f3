package bundle

import (
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/bundle/envelope"
)

// openAttestation is step 1 of Verify: the attestation envelope opened
// with a key from vs (envelope.Open), its refusals as bundle reasons.
func openAttestation(att []byte, vs envelope.Verifiers) ([]byte, envelope.TrustedKey, error) {
	payload, k, err := envelope.Open(att, PayloadType, AttestationFile, vs)
	if err == nil {
		return payload, k, nil
	}
	return openAttestationError(err)
}

// openAttestationError maps an envelope refusal to its bundle reason.
func openAttestationError(err error) ([]byte, envelope.TrustedKey, error) {
	var oe *envelope.Error
	if !errors.As(err, &oe) {
		return nil, nil, refuse(Malformed, err.Error(), "", err)
	}
	switch oe.Reason {
	case envelope.Malformed:
		return nil, nil, refuse(Malformed, oe.Err.Error(), "", err)
	case envelope.UnknownKey:
		return nil, nil, refuse(UnknownKey, fmt.Sprintf("keyid %q is not in the trust store", clip(oe.KeyID)), "", err)
	}
	return nil, nil, refuse(SignatureInvalid, "the signature does not verify with key "+oe.KeyID, "", err)
}
