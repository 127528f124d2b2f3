// Package sigstore writes and reads the companion Sigstore bundle of an
// evidence bundle: a Sigstore bundle v0.3 (media type
// application/vnd.dev.sigstore.bundle.v0.3+json, the protobuf-specs
// Bundle message in its JSON form) that carries the archive's DSSE
// envelope, so that Sigstore tooling (sigstore-go, cosign) can verify it.
//
// # Wire format
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
	"github.com/proofgate/proofgate/kernel/durable"
	"github.com/proofgate/proofgate/kernel/strictjson"
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
