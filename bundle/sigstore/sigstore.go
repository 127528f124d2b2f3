// Package sigstore writes and reads the companion Sigstore bundle of an
// evidence bundle: a Sigstore bundle v0.3 (media type
// application/vnd.dev.sigstore.bundle.v0.3+json, the protobuf-specs
// Bundle message in its JSON form) that carries the archive's DSSE
// envelope, so that Sigstore tooling (sigstore-go, cosign) can verify it.
// It also signs keyless ([KeylessSigner], an envelope.MaterialSigner) and
// verifies keyless material against a trusted root and identity policies
// ([Verifiers], an envelope.MaterialVerifiers); docs/adr/0010.
//
// # Wire format (key-signed)
//
// For a key-signed envelope the bundle is
//
//	{
//	  "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
//	  "verificationMaterial": {
//	    "publicKey": {
//	      "hint": "<key id>"
//	    }
//	  },
//	  "dsseEnvelope": {
//	    "payload": "<the envelope's payload, standard base64>",
//	    "payloadType": "application/vnd.in-toto+json",
//	    "signatures": [
//	      {
//	        "sig": "<the envelope's signature, standard base64>"
//	      }
//	    ]
//	  }
//	}
//
// with fields in protobuf field order, two-space indentation and a final
// newline, so the same envelope always gives the same bytes. The payload,
// payload type and signature are the archive envelope's, byte for byte.
// The envelope's keyid is left out: it lies outside the signed PAE, and
// Sigstore verifiers (go-securesystemslib) compare a present keyid with
// their own notion of the key id, which is not ProofGate's. The key id is
// the publicKey hint instead, which a verifier maps to its trusted key.
// There are no transparency log entries and no timestamps: the verifier
// must be told to expect none (sigstore-go: verify.WithNoObserverTimestamps).
//
// # Wire format (keyless)
//
// A keyless envelope's keyid (and its predicate's key_id) is "keyless:"
// and the 64 lowercase hex digits of the SHA-256 of the ephemeral ECDSA
// P-256 key's DER SubjectPublicKeyInfo; its signature is the ASN.1 DER
// ECDSA signature of SHA-256(PAE(payloadType, payload)), at most
// envelope.MaxMaterialSignature bytes. Its material (the archive member
// attestation.sigstore.json, and the companion <name>.sigstore.json: the
// same bytes) is
//
//	{
//	  "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
//	  "verificationMaterial": {
//	    "certificate": {
//	      "rawBytes": "<the Fulcio leaf, DER, standard base64>"
//	    },
//	    "tlogEntries": [
//	      {
//	        "logIndex": "<decimal, left out when 0>",
//	        "logId": {
//	          "keyId": "<SHA-256 of the log's DER public key, standard base64>"
//	        },
//	        "kindVersion": {
//	          "kind": "dsse",
//	          "version": "0.0.1"
//	        },
//	        "integratedTime": "<Unix seconds, decimal>",
//	        "inclusionPromise": {
//	          "signedEntryTimestamp": "<the log's SET, standard base64>"
//	        },
//	        "inclusionProof": {
//	          "logIndex": "<decimal, left out when 0>",
//	          "rootHash": "<standard base64>",
//	          "treeSize": "<decimal>",
//	          "hashes": ["<standard base64>", …],
//	          "checkpoint": {
//	            "envelope": "<the signed checkpoint note>"
//	          }
//	        },
//	        "canonicalizedBody": "<the Rekor entry, standard base64>"
//	      }
//	    ],
//	    "timestampVerificationData": {
//	      "rfc3161Timestamps": [
//	        {
//	          "signedTimestamp": "<the RFC 3161 TimeStampResp, DER, standard base64>"
//	        }
//	      ]
//	    }
//	  },
//	  "dsseEnvelope": {
//	    "payload": "<the envelope's payload, standard base64>",
//	    "payloadType": "application/vnd.in-toto+json",
//	    "signatures": [
//	      {
//	        "sig": "<the envelope's signature, standard base64>"
//	      }
//	    ]
//	  }
//	}
//
// written by Marshal (protobuf field order, two-space indentation, a final
// newline; protojson leaves out zero and empty fields, so tlogEntries is
// absent without a Rekor URL and timestampVerificationData without a
// TSA). The RFC 3161 timestamp is over SHA-256 of the signature bytes.
// The verification material is exactly one certificate: a publicKey or
// an x509CertificateChain, beside it or instead, is refused. The format is
// closed: members are the JSON names above, case-sensitive, each at most
// once (protobuf field names such as dsse_envelope are refused, though
// protojson would take them), the envelope's signature carries no keyid,
// and there are at most MaxTlogEntries entries and MaxTimestamps
// timestamps; the whole is at most MaxSize bytes.
//
// # Keyless verification
//
// [Verifiers.VerifierFor] checks, in this order, each refusal a
// *VerifyError whose Reason is the first that fails:
//
//  1. Malformed: the strict parse above, then protojson and sigstore-go's
//     bundle validation (a v0.3 bundle with inclusion proofs).
//  2. MaterialMismatch: the archive's envelope has the keyid, and the
//     material's envelope its payload type, payload and signature byte
//     for byte; the certificate's public key hashes to the keyid.
//  3. TlogInvalid: every tlog entry verifies against a log of the trusted
//     root (inclusion proof, SET, body equal to the envelope and the
//     certificate, integrated time within the certificate's validity),
//     one entry per log (sigstore-go verify.VerifyTlogEntry).
//  4. TimestampInvalid: every RFC 3161 timestamp verifies against a TSA of
//     the trusted root (verify.VerifySignedTimestamp); at least one
//     witnessed time exists (a timestamp, or the integrated time of an
//     entry with a SET); each witnessed time lies within the certificate's
//     NotBefore and NotAfter.
//  5. CertificateInvalid: the certificate chains to a Fulcio CA of the
//     trusted root, as a code-signing leaf, at every witnessed time
//     (verify.VerifyLeafCertificate); its key is ECDSA P-256.
//  6. SignatureInvalid: the certificate's key verifies the signature.
//  7. sigstore-go's whole verifier (verify.NewVerifier with
//     WithObserverTimestamps(1) and, with entries, WithTransparencyLog)
//     is the decision; a refusal the steps above did not foresee is
//     Malformed.
//  8. IdentityMismatch: the certificate matches at least one [Identity]:
//     issuer extension …57264.1.8 (the deprecated …1.1, if present, equal
//     to it), SAN and Build Signer URI for the signer workflow, Source
//     Repository URI and Ref.
//
// The WitnessedKey's time is the earliest witnessed time; CheckAt
// refuses a signed_at more than MaxSigningDelay before it or five minutes
// after it (SigningTimeImplausible) and a "repo:OWNER/REPO" identity that
// is not the certificate's source repository (IdentityMismatch), and
// applies the matched identities' Valid at the witnessed time, as
// CheckWitnessed does.
package sigstore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// MediaType is the media type of the bundles this package writes.
const MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// MaxSize bounds a Sigstore bundle file read by Read: the DSSE envelope's
// bound, with room for the base64 growth of its payload.
const MaxSize = 2 * envelope.MaxSize

// Error is a refused Sigstore bundle or envelope.
type Error struct {
	Detail string
}

func (e *Error) Error() string { return "sigstore bundle: " + e.Detail }

// FromEnvelope returns the Sigstore bundle carrying the DSSE envelope env
// (the bytes of attestation.dsse.json), with hint (the signer's key id) as
// the publicKey hint. env must hold exactly one signature.
func FromEnvelope(env []byte, hint string) ([]byte, error) {
	var e envelope.Envelope
	if err := strictjson.Decode(env, &e); err != nil {
		return nil, &Error{Detail: "envelope: " + err.Error()}
	}
	if len(e.Signatures) != 1 {
		return nil, &Error{Detail: fmt.Sprintf("envelope has %d signatures, want 1", len(e.Signatures))}
	}
	payload, err := base64.StdEncoding.Strict().DecodeString(e.Payload)
	if err != nil {
		return nil, &Error{Detail: "envelope payload: " + err.Error()}
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(e.Signatures[0].Sig)
	if err != nil {
		return nil, &Error{Detail: "envelope signature: " + err.Error()}
	}
	if hint == "" {
		return nil, &Error{Detail: "empty public key hint"}
	}
	return Marshal(&protobundle.Bundle{
		MediaType: MediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{
				PublicKey: &protocommon.PublicKeyIdentifier{Hint: hint},
			},
		},
		Content: &protobundle.Bundle_DsseEnvelope{
			DsseEnvelope: &protodsse.Envelope{
				Payload:     payload,
				PayloadType: e.PayloadType,
				Signatures:  []*protodsse.Signature{{Sig: sig}},
			},
		},
	})
}

// Marshal is the deterministic JSON form of b: protojson's output (whose
// whitespace protojson deliberately varies) compacted, then indented by two
// spaces, with a final newline.
func Marshal(b *protobundle.Bundle) ([]byte, error) {
	raw, err := protojson.Marshal(b)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// Bundle is what Read returns of a key-signed Sigstore bundle.
type Bundle struct {
	Hint        string // the publicKey hint: the signer's key id
	PayloadType string
	Payload     []byte
	Sig         []byte
}

// Read parses a Sigstore bundle of media type MediaType whose verification
// material is a public key and whose content is a DSSE envelope with one
// signature. It checks shape only, not the signature.
func Read(b []byte) (*Bundle, error) {
	if len(b) > MaxSize {
		return nil, &Error{Detail: fmt.Sprintf("%d bytes, over the %d-byte limit", len(b), MaxSize)}
	}
	// A key-signed bundle is a closed format here: the strict decoder
	// refuses a duplicate, case-variant or unknown member (a certificate or
	// tlog entry beside the key included), so one reading is all it has
	// (docs/SPEC.md section 8). protojson, which also takes proto field
	// names, only writes.
	var kb keyBundle
	if err := strictjson.Decode(b, &kb); err != nil {
		return nil, &Error{Detail: err.Error()}
	}
	switch {
	case kb.MediaType != MediaType:
		return nil, &Error{Detail: fmt.Sprintf("media type %q, want %q", clip(kb.MediaType), MediaType)}
	case kb.VerificationMaterial.PublicKey == nil || kb.VerificationMaterial.PublicKey.Hint == "":
		return nil, &Error{Detail: "verification material is not a public key with a hint"}
	case kb.DsseEnvelope == nil:
		return nil, &Error{Detail: "content is not a DSSE envelope"}
	case len(kb.DsseEnvelope.Signatures) != 1:
		return nil, &Error{Detail: fmt.Sprintf("envelope has %d signatures, want 1", len(kb.DsseEnvelope.Signatures))}
	}
	env := kb.DsseEnvelope
	payload, err := base64.StdEncoding.Strict().DecodeString(env.Payload)
	if err != nil {
		return nil, &Error{Detail: "envelope payload: " + err.Error()}
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(env.Signatures[0].Sig)
	if err != nil {
		return nil, &Error{Detail: "envelope signature: " + err.Error()}
	}
	return &Bundle{Hint: kb.VerificationMaterial.PublicKey.Hint, PayloadType: env.PayloadType, Payload: payload, Sig: sig}, nil
}

// keyBundle is the JSON of a key-signed Sigstore bundle v0.3 with a DSSE
// envelope, as protojson writes it (FromEnvelope).
type keyBundle struct {
	MediaType            string `json:"mediaType"`
	VerificationMaterial struct {
		PublicKey *struct {
			Hint string `json:"hint"`
		} `json:"publicKey"`
	} `json:"verificationMaterial"`
	DsseEnvelope *struct {
		Payload     string `json:"payload"`
		PayloadType string `json:"payloadType"`
		Signatures  []struct {
			Sig   string `json:"sig"`
			KeyID string `json:"keyid,omitempty"`
		} `json:"signatures"`
	} `json:"dsseEnvelope"`
}

// SameEnvelope reports (as an *Error) whether b carries a different
// envelope than env, the bytes of an archive's attestation.dsse.json:
// payload type, payload and signature must all be equal.
func (b *Bundle) SameEnvelope(env []byte) error {
	want, err := FromEnvelope(env, b.Hint)
	if err != nil {
		return err
	}
	w, err := Read(want)
	if err != nil {
		return err
	}
	switch {
	case w.PayloadType != b.PayloadType:
		return &Error{Detail: "payload type differs from the archive's envelope"}
	case !bytes.Equal(w.Payload, b.Payload):
		return &Error{Detail: "payload differs from the archive's envelope"}
	case !bytes.Equal(w.Sig, b.Sig):
		return &Error{Detail: "signature differs from the archive's envelope"}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// WriteFile writes the Sigstore bundle b to path durably (see package
// durable): an existing file is refused with fs.ErrExist and left alone
// unless replace.
func WriteFile(path string, b []byte, replace bool) error {
	var err error
	if replace {
		err = durable.WriteFile(path, b, 0o644)
	} else {
		err = durable.CreateExclusive(path, b, 0o644)
	}
	if err != nil && errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, fs.ErrExist)
	}
	return err
}
