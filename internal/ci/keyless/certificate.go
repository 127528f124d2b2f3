package keyless

import (
	"crypto/x509"
	"errors"
	"fmt"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proofgate/proofgate/bundle/sigstore"
)

// CertificateIdentity returns the identity of the leaf certificate of a
// Sigstore bundle: its first URI SAN (for GitHub, the job's workflow at
// its ref), else its first email SAN. It reports only: the material was
// made by the job's own signer, and verification judges it.
func CertificateIdentity(material []byte) (string, error) {
	if len(material) > sigstore.MaxSize {
		return "", fmt.Errorf("sigstore bundle: %d bytes, over the %d-byte limit", len(material), sigstore.MaxSize)
	}
	var b protobundle.Bundle
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(material, &b); err != nil {
		return "", fmt.Errorf("sigstore bundle: %w", err)
	}
	vm := b.GetVerificationMaterial()
	der := vm.GetCertificate().GetRawBytes()
	if chain := vm.GetX509CertificateChain().GetCertificates(); der == nil && len(chain) > 0 {
		der = chain[0].GetRawBytes()
	}
	if der == nil {
		return "", errors.New("sigstore bundle: no certificate")
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return "", fmt.Errorf("sigstore bundle certificate: %w", err)
	}
	switch {
	case len(c.URIs) > 0:
		return c.URIs[0].String(), nil
	case len(c.EmailAddresses) > 0:
		return c.EmailAddresses[0], nil
	}
	return "", errors.New("sigstore bundle certificate: no URI or email subject alternative name")
}
