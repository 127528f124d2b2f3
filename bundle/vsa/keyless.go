package vsa

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/canon"
)

// A keyless summary is signed by an ephemeral key that Fulcio certifies
// for the gate's workflow identity, with an RFC 3161 timestamp: the file
// is a Sigstore bundle (v0.3 JSON, bundle/sigstore) whose dsseEnvelope
// carries the same statement a key-signed summary does. cosign
// verify-blob-attestation and gh attestation verify check it against the
// archive it names; OpenKeyless checks it as Open does, the gate's
// identity pinned by the material verifiers' identity policy rather than
// a trusted key.

// SignKeyless signs st with the keyless signer ms and returns the VSA
// file's bytes: the Sigstore bundle ms returns.
func SignKeyless(ctx context.Context, ms envelope.MaterialSigner, st *Statement) ([]byte, error) {
	payload, err := canon.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("vsa: %w", err)
	}
	if len(payload) > MaxPayload {
		return nil, &Error{Field: "statement", Detail: fmt.Sprintf("%d bytes, more than %d", len(payload), MaxPayload)}
	}
	_, material, err := ms.SignEnvelope(ctx, PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("vsa: %w", err)
	}
	return material, nil
}

// OpenKeyless verifies a VSA file written by SignKeyless: the Sigstore
// bundle's certificate, timestamp and identity with mv (bundle/sigstore
// Verifiers: a trusted root and the gate's pinned identity), the
// signature over the statement, then the statement and the policy
// document as Open does. timeVerified must lie within the keyless signing
// window of the witnessed time (sigstore.MaxSigningDelay before it, the
// clock skew after), and the matched identity be valid at the witnessed
// time. Refusals of the material carry the material's reason
// (certificate-invalid, timestamp-invalid, identity-mismatch, …); every
// refusal is a *VerifyError.
func OpenKeyless(b []byte, mv envelope.MaterialVerifiers, policy []byte) (*Statement, envelope.WitnessedKey, error) {
	return OpenKeylessAt(b, mv, policy, time.Now())
}

// OpenKeylessAt is OpenKeyless with the verifier's clock at now.
func OpenKeylessAt(b []byte, mv envelope.MaterialVerifiers, policy []byte, now time.Time) (*Statement, envelope.WitnessedKey, error) {
	if len(b) > envelope.MaxSize {
		return nil, nil, refuse(Malformed, nil, "vsa: %d bytes, more than %d", len(b), envelope.MaxSize)
	}
	env, err := sigstore.ArchiveEnvelope(b)
	if err != nil {
		return nil, nil, refuse(Malformed, err, "vsa: not a keyless Sigstore bundle: %v", err)
	}
	payload, k, err := envelope.OpenWithMaterial(env, PayloadType, "vsa", b, mv)
	if err != nil {
		return nil, nil, refusalOf(err)
	}
	st, at, err := decodeAt(payload, policy, now)
	if err != nil {
		return nil, nil, err
	}
	// The identity is the pinned one: a keyless gate vouches for what its
	// workflow verified, in whichever repository that runs.
	if err := k.CheckAt(at, ""); err != nil {
		return nil, nil, refusalOf(err)
	}
	return st, k, nil
}

// refusalOf is a *VerifyError of err with the keyless material's reason,
// or the envelope's, or Malformed.
func refusalOf(err error) error {
	var se *sigstore.VerifyError
	if errors.As(err, &se) {
		return refuse(Reason(se.Reason), err, "%v", err)
	}
	var ee *envelope.Error
	if errors.As(err, &ee) {
		return refuse(Reason(ee.Reason), err, "%v", err)
	}
	return refuse(Malformed, err, "%v", err)
}
