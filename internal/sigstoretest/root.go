package sigstoretest

import (
	"crypto/x509"

	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/proofgate/proofgate/internal/strictjson"
)

// maxResponse bounds what Start reads from a service.
const maxResponse = 1 << 20

// trustedRoot builds trusted_root.json for the running services.
func trustedRoot(fulcioURL, tsaURL string) ([]byte, error) {
	ca, err := fulcioCA(fulcioURL)
	if err != nil {
		return nil, err
	}
	tsa, err := timestampAuthority(tsaURL)
	if err != nil {
		return nil, err
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01,
		[]root.CertificateAuthority{ca}, nil, []root.TimestampingAuthority{tsa}, nil)
	if err != nil {
		return nil, err
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if _, err := root.NewTrustedRootFromJSON(b); err != nil { // what verifiers will read
		return nil, fmt.Errorf("trusted root does not read back: %w", err)
	}
	// One line ending in a newline: gh attestation verify
	// --custom-trusted-root reads the file as JSON lines, and a last line
	// without its newline is not read at all.
	return append(b, '\n'), nil
}

// fulcioCA reads Fulcio's CA chain: {"chains": [{"certificates": [PEM, ...]}]},
// each chain from the issuing certificate up to the root.
func fulcioCA(fulcioURL string) (*root.FulcioCertificateAuthority, error) {
	body, err := get(fulcioURL + "/api/v2/trustBundle")
	if err != nil {
		return nil, err
	}
	var bundle struct {
		Chains []struct {
			Certificates []string `json:"certificates"`
		} `json:"chains"`
	}
	if err := strictjson.Decode(body, &bundle); err != nil {
		return nil, fmt.Errorf("fulcio trust bundle: %w", err)
	}
	if len(bundle.Chains) != 1 {
		return nil, fmt.Errorf("fulcio trust bundle: %d chains, want 1", len(bundle.Chains))
	}
	var pems []byte
	for _, c := range bundle.Chains[0].Certificates {
		pems = append(pems, c...)
	}
	certs, err := parsePEMs(pems)
	if err != nil {
		return nil, fmt.Errorf("fulcio trust bundle: %w", err)
	}
	rootCert := certs[len(certs)-1]
	return &root.FulcioCertificateAuthority{
		Root:                rootCert,
		Intermediates:       certs[:len(certs)-1],
		ValidityPeriodStart: rootCert.NotBefore,
		URI:                 fulcioURL,
	}, nil
}

// timestampAuthority reads the TSA's chain: PEM leaf, intermediates, root.
func timestampAuthority(tsaURL string) (*root.SigstoreTimestampingAuthority, error) {
	body, err := get(tsaURL + "/api/v1/timestamp/certchain")
	if err != nil {
		return nil, err
	}
	certs, err := parsePEMs(body)
	if err != nil {
		return nil, fmt.Errorf("tsa chain: %w", err)
	}
	if len(certs) < 2 {
		return nil, fmt.Errorf("tsa chain: %d certificates, want a leaf and a root", len(certs))
	}
	leaf := certs[0]
	return &root.SigstoreTimestampingAuthority{
		Root:                certs[len(certs)-1],
		Intermediates:       certs[1 : len(certs)-1],
		Leaf:                leaf,
		ValidityPeriodStart: leaf.NotBefore,
		URI:                 tsaURL + "/api/v1/timestamp",
	}, nil
}

func parsePEMs(b []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %q, want CERTIFICATE", blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

func get(url string) ([]byte, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxResponse))
}
