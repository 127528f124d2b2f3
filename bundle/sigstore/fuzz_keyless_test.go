package sigstore_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/proofgate/proofgate/bundle/sigstore"
)

var reasons = map[sigstore.Reason]bool{
	sigstore.Malformed: true, sigstore.MaterialMismatch: true, sigstore.TlogInvalid: true,
	sigstore.TimestampInvalid: true, sigstore.CertificateInvalid: true, sigstore.SignatureInvalid: true,
	sigstore.IdentityMismatch: true, sigstore.SigningTimeImplausible: true,
}

// FuzzVerifierFor: keyless material is parsed (strictly, then by protojson
// and sigstore-go) and verified without panics; every refusal is a
// *VerifyError with a known reason; whatever is accepted has no duplicate
// member names and carries the signed envelope.
func FuzzVerifierFor(f *testing.F) {
	w := newWorld(f)
	v := verifiers(f, w)
	s := w.sign(f, nil, defaultClaims(), false, true)
	good := s.material(f)
	f.Add(good)
	for _, e := range [][2]string{
		{`"certificate": {`, `"publicKey": {"hint": "x"}, "certificate": {`},
		{`"mediaType": `, `"mediaType": "x", "mediaType": `},
		{`"mediaType": `, `"MediaType": "x", "mediaType": `},
		{`"dsseEnvelope": `, `"dsse_envelope": {}, "dsseEnvelope": `},
		{`"sig": `, `"keyid": "x", "sig": `},
		{`"integratedTime": "`, `"integratedTime": "1`},
		{`"tlogEntries": [`, `"tlogEntries": [{}, `},
		{`"rfc3161Timestamps": [`, `"rfc3161Timestamps": [{"signedTimestamp": ""}, `},
	} {
		f.Add(bytes.Replace(good, []byte(e[0]), []byte(e[1]), 1))
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"certificate":{"rawBytes":"AA=="}},"dsseEnvelope":{"payload":"","payloadType":"","signatures":[{"sig":"AA=="}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := v.VerifierFor(s.keyID, s.env, b)
		if err != nil {
			var ve *sigstore.VerifyError
			if !errors.As(err, &ve) || !reasons[ve.Reason] {
				t.Fatalf("untyped refusal %v", err)
			}
			return
		}
		if _, err := jsontext.NewDecoder(bytes.NewReader(b)).ReadValue(); err != nil {
			t.Fatalf("accepted %q with duplicate names: %v", b, err)
		}
		if k.KeyID() != s.keyID {
			t.Fatalf("accepted for key %s", k.KeyID())
		}
	})
}
