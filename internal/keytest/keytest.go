// Package keytest makes throwaway Ed25519 signing keys for tests, through
// the real bundle/key generator and loader (as net/http/httptest serves
// net/http's tests).
package keytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/bundle/key"
)

// Key is a generated key pair on disk, loaded as a signer.
type Key struct {
	Signer  *key.Signer
	Path    string // PKCS#8 PEM private key
	PubPath string // its public key PEM
	PubPEM  []byte
}

// New generates a key in a temporary directory of t and loads it.
func New(t testing.TB) *Key {
	t.Helper()
	p := filepath.Join(t.TempDir(), "k.pem")
	if _, err := key.Generate(p); err != nil {
		t.Fatal(err)
	}
	s, err := key.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(key.PublicPath(p))
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Signer: s, Path: p, PubPath: key.PublicPath(p), PubPEM: pub}
}
