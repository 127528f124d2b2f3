package githubtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// APIHost is the host a tool that only talks to github.com (gh
// attestation) is pointed at through APIProxy.
const APIHost = "api.github.com"

// APIProxy serves the fake as https://api.github.com to a tool that
// honours HTTPS_PROXY and SSL_CERT_FILE, all on loopback: it returns an
// HTTP proxy URL that accepts only CONNECT api.github.com:443 and joins it
// to a TLS front of the fake, and a CA file (PEM) holding the only
// certificate that front presents. Nothing is resolved or dialled but
// 127.0.0.1. Give the tool HTTPS_PROXY=proxy, SSL_CERT_FILE=caFile and a
// token (GH_TOKEN for gh).
func (s *Server) APIProxy(t testing.TB) (proxy, caFile string) {
	t.Helper()
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	cert := apiCert(t)
	front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	front.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	front.StartTLS()
	t.Cleanup(front.Close)
	addr := front.Listener.Addr().String()
	connect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || r.Host != APIHost+":443" {
			http.Error(w, "this proxy joins only CONNECT "+APIHost+":443", http.StatusForbidden)
			return
		}
		up, err := net.Dial("tcp", addr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			up.Close()
			http.Error(w, "no hijacking", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
		c, buf, err := hj.Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(c, up)
		c.Close()
	}))
	t.Cleanup(connect.Close)
	caFile = filepath.Join(t.TempDir(), "api-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644); err != nil {
		t.Fatal(err)
	}
	return connect.URL, caFile
}

// apiCert is a self-signed certificate for APIHost, valid for an hour.
func apiCert(t testing.TB) tls.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: APIHost}, DNSNames: []string{APIHost},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}
