package keyless

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"

	"github.com/proofgate/proofgate/bundle/sigstore"
)

// leafWithSAN makes a self-signed certificate with the given SANs.
func leafWithSAN(t *testing.T, uri, email string) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{}, NotBefore: time.Now(), NotAfter: time.Now().Add(10 * time.Minute)}
	if uri != "" {
		u, _ := url.Parse(uri)
		tmpl.URIs = []*url.URL{u}
	}
	if email != "" {
		tmpl.EmailAddresses = []string{email}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func certBundle(t *testing.T, der []byte) []byte {
	t.Helper()
	b, err := sigstore.Marshal(&protobundle.Bundle{MediaType: sigstore.MediaType, VerificationMaterial: &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: der}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCertificateIdentity(t *testing.T) {
	const san = "https://github.com/OWNER/proofgate/.github/workflows/proofgate.yml@refs/tags/v1"
	got, err := CertificateIdentity(certBundle(t, leafWithSAN(t, san, "")))
	if err != nil || got != san {
		t.Fatalf("%q %v", got, err)
	}
	if got, err := CertificateIdentity(certBundle(t, leafWithSAN(t, "", "a@example.com"))); err != nil || got != "a@example.com" {
		t.Fatalf("%q %v", got, err)
	}
	hint, err := sigstore.FromEnvelope([]byte(`{"payloadType":"x","payload":"","signatures":[{"keyid":"k","sig":"AA=="}]}`), "k")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"key bundle":   hint,
		"no SAN":       certBundle(t, leafWithSAN(t, "", "")),
		"bad DER":      certBundle(t, []byte("not a certificate")),
		"not JSON":     []byte("{"),
		"oversize":     bytes.Repeat([]byte(" "), sigstore.MaxSize+1),
		"wrong fields": []byte(`{"mediaType": 7}`),
	} {
		if got, err := CertificateIdentity(b); err == nil {
			t.Errorf("%s: identity %q", name, got)
		}
	}
}
