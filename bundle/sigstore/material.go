package sigstore

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Bounds on keyless material, below sigstore-go's own (32 each).
const (
	MaxTimestamps  = 8
	MaxTlogEntries = 8
)

// keylessBundle is the JSON of keyless material as the package doc
// specifies it: a closed format, so the strict decoder refuses unknown,
// duplicate and case-variant members (and protobuf field names, which
// protojson would also take) before protojson reads it.
type keylessBundle struct {
	MediaType            string `json:"mediaType"`
	VerificationMaterial *struct {
		Certificate *struct {
			RawBytes string `json:"rawBytes"`
		} `json:"certificate"`
		PublicKey                 json.RawMessage `json:"publicKey"`
		X509CertificateChain      json.RawMessage `json:"x509CertificateChain"`
		TlogEntries               []tlogEntryJSON `json:"tlogEntries"`
		TimestampVerificationData *struct {
			Rfc3161Timestamps []struct {
				SignedTimestamp string `json:"signedTimestamp"`
			} `json:"rfc3161Timestamps"`
		} `json:"timestampVerificationData"`
	} `json:"verificationMaterial"`
	DsseEnvelope *struct {
		Payload     string `json:"payload"`
		PayloadType string `json:"payloadType"`
		Signatures  []struct {
			Sig   string          `json:"sig"`
			KeyID json.RawMessage `json:"keyid"`
		} `json:"signatures"`
	} `json:"dsseEnvelope"`
	MessageSignature json.RawMessage `json:"messageSignature"`
}

// tlogEntryJSON is a Rekor TransparencyLogEntry; protojson checks the
// values.
type tlogEntryJSON struct {
	LogIndex json.RawMessage `json:"logIndex"`
	LogID    *struct {
		KeyID string `json:"keyId"`
	} `json:"logId"`
	KindVersion *struct {
		Kind    string `json:"kind"`
		Version string `json:"version"`
	} `json:"kindVersion"`
	IntegratedTime   json.RawMessage `json:"integratedTime"`
	InclusionPromise *struct {
		SignedEntryTimestamp string `json:"signedEntryTimestamp"`
	} `json:"inclusionPromise"`
	InclusionProof *struct {
		LogIndex   json.RawMessage `json:"logIndex"`
		RootHash   string          `json:"rootHash"`
		TreeSize   json.RawMessage `json:"treeSize"`
		Hashes     []string        `json:"hashes"`
		Checkpoint *struct {
			Envelope string `json:"envelope"`
		} `json:"checkpoint"`
	} `json:"inclusionProof"`
	CanonicalizedBody string `json:"canonicalizedBody"`
}

// material is parsed keyless material.
type material struct {
	bundle      *sgbundle.Bundle
	cert        *x509.Certificate
	payloadType string
	payload     []byte
	sig         []byte
}

// parseMaterial strictly parses keyless material (MaxSize bytes at most)
// and loads it with sigstore-go. Every refusal is Malformed.
func parseMaterial(b []byte) (*material, error) {
	if len(b) > MaxSize {
		return nil, refuse(Malformed, nil, "%d bytes, over the %d-byte limit", len(b), MaxSize)
	}
	var kb keylessBundle
	if err := strictjson.Decode(b, &kb); err != nil {
		return nil, refuse(Malformed, err, "not a keyless Sigstore bundle")
	}
	if err := kb.shape(); err != nil {
		return nil, err
	}
	var pb protobundle.Bundle
	if err := (protojson.UnmarshalOptions{}).Unmarshal(b, &pb); err != nil {
		return nil, refuse(Malformed, err, "protojson")
	}
	sb, err := sgbundle.NewBundle(&pb)
	if err != nil {
		return nil, refuse(Malformed, err, "sigstore-go")
	}
	cert, err := x509.ParseCertificate(pb.GetVerificationMaterial().GetCertificate().GetRawBytes())
	if err != nil {
		return nil, refuse(Malformed, err, "certificate")
	}
	env := pb.GetDsseEnvelope()
	return &material{bundle: sb, cert: cert, payloadType: env.PayloadType, payload: env.Payload, sig: env.Signatures[0].Sig}, nil
}

// shape checks what the strict decoder cannot: the media type, one
// certificate and no key, one keyless DSSE signature, bounded counts.
func (kb *keylessBundle) shape() error {
	vm := kb.VerificationMaterial
	switch {
	case kb.MediaType != MediaType:
		return refuse(Malformed, nil, "media type %q, want %q", clip(kb.MediaType), MediaType)
	case vm == nil:
		return refuse(Malformed, nil, "no verification material")
	case vm.PublicKey != nil && vm.Certificate != nil:
		return refuse(Malformed, nil, "verification material has both a public key and a certificate")
	case vm.PublicKey != nil || vm.X509CertificateChain != nil || vm.Certificate == nil:
		return refuse(Malformed, nil, "verification material is not one certificate")
	case vm.Certificate.RawBytes == "":
		return refuse(Malformed, nil, "empty certificate")
	case len(vm.TlogEntries) > MaxTlogEntries:
		return refuse(Malformed, nil, "%d tlog entries, at most %d", len(vm.TlogEntries), MaxTlogEntries)
	case vm.TimestampVerificationData != nil && len(vm.TimestampVerificationData.Rfc3161Timestamps) > MaxTimestamps:
		return refuse(Malformed, nil, "%d timestamps, at most %d", len(vm.TimestampVerificationData.Rfc3161Timestamps), MaxTimestamps)
	case kb.MessageSignature != nil || kb.DsseEnvelope == nil:
		return refuse(Malformed, nil, "content is not a DSSE envelope")
	case len(kb.DsseEnvelope.Signatures) != 1:
		return refuse(Malformed, nil, "envelope has %d signatures, want 1", len(kb.DsseEnvelope.Signatures))
	case kb.DsseEnvelope.Signatures[0].KeyID != nil:
		return refuse(Malformed, nil, "the envelope's signature has a keyid (the wire format leaves it out)")
	}
	env := kb.DsseEnvelope
	if _, err := base64.StdEncoding.Strict().DecodeString(env.Payload); err != nil {
		return refuse(Malformed, err, "envelope payload: not standard base64")
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(env.Signatures[0].Sig)
	if err != nil || len(sig) == 0 || len(sig) > envelope.MaxMaterialSignature {
		return refuse(Malformed, err, "envelope signature: not a base64 signature of at most %d bytes", envelope.MaxMaterialSignature)
	}
	return nil
}

// sameEnvelope refuses (MaterialMismatch) material whose envelope is not
// the archive's env (payload type, payload, signature) or whose
// certificate key does not hash to keyID, which must also be env's keyid.
func (m *material) sameEnvelope(keyID string, env []byte) error {
	var e envelope.Envelope
	if len(env) > envelope.MaxSize {
		return refuse(Malformed, nil, "the archive's envelope is over %d bytes", envelope.MaxSize)
	}
	if err := strictjson.Decode(env, &e); err != nil || len(e.Signatures) != 1 {
		return refuse(Malformed, err, "the archive's envelope is not a DSSE envelope with one signature")
	}
	payload, err1 := base64.StdEncoding.Strict().DecodeString(e.Payload)
	sig, err2 := base64.StdEncoding.Strict().DecodeString(e.Signatures[0].Sig)
	if err1 != nil || err2 != nil {
		return refuse(Malformed, nil, "the archive's envelope: not standard base64")
	}
	switch {
	case e.Signatures[0].KeyID != keyID:
		return refuse(MaterialMismatch, nil, "the archive's envelope keyid %q is not %q", clip(e.Signatures[0].KeyID), clip(keyID))
	case e.PayloadType != m.payloadType:
		return refuse(MaterialMismatch, nil, "payload type differs from the archive's envelope")
	case !bytes.Equal(payload, m.payload):
		return refuse(MaterialMismatch, nil, "payload differs from the archive's envelope")
	case !bytes.Equal(sig, m.sig):
		return refuse(MaterialMismatch, nil, "signature differs from the archive's envelope")
	}
	id, err := keylessID(m.cert.PublicKey)
	if err != nil || id != keyID {
		return refuse(MaterialMismatch, err, "the certificate's key hashes to %s, not the keyid %s", id, clip(keyID))
	}
	return nil
}

// ArchiveEnvelope rebuilds, from a keyless bundle's Sigstore bundle (the
// archive's attestation.sigstore.json, which is its companion), the DSSE
// envelope the archive carries as attestation.dsse.json: the same payload
// type, payload and signature, under the keyless key id of the
// certificate's key. Verifying the rebuilt envelope with the Sigstore
// bundle as material verifies the companion alone (ADR 0040).
func ArchiveEnvelope(b []byte) ([]byte, error) {
	m, err := parseMaterial(b)
	if err != nil {
		return nil, err
	}
	id, err := keylessID(m.cert.PublicKey)
	if err != nil {
		return nil, refuse(CertificateInvalid, err, "the certificate's key")
	}
	env := envelope.Envelope{PayloadType: m.payloadType, Payload: base64.StdEncoding.EncodeToString(m.payload),
		Signatures: []envelope.Signature{{KeyID: id, Sig: base64.StdEncoding.EncodeToString(m.sig)}}}
	return canon.Marshal(&env)
}
