// Package key loads, generates and identifies the Ed25519 keys that sign
// evidence bundles and checkpoints.
//
// Private keys are PKCS#8 PEM ("PRIVATE KEY"), so keys made by
// `openssl genpkey -algorithm ed25519` load as they are. Public keys are
// PKIX PEM ("PUBLIC KEY"). A key id is the lowercase hex SHA-256 of the
// public key's DER SubjectPublicKeyInfo. A *Signer is the Ed25519 PKCS#8
// implementation of bundle/envelope's Signer (KeyID, Sign); other signers
// (KMS, keyless) implement that interface in their own packages. Signing
// goes through github.com/sigstore/sigstore's signature.Signer. Error
// messages never include key material.
package key

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/durable"
)

// MaxPEMSize bounds a key file.
const MaxPEMSize = 64 << 10

// EnvPrefix marks a key reference naming an environment variable holding
// the PEM text ("env:PROOFGATE_SIGNING_KEY").
const EnvPrefix = "env:"

// ErrNotEd25519 is returned for a well-formed key of another algorithm.
var ErrNotEd25519 = errors.New("not an Ed25519 key")

// Signer signs with one Ed25519 key and knows its key id.
type Signer struct {
	signature.Signer
	ID     string
	Public ed25519.PublicKey
}

// KeyID returns the key id the signatures of s are looked up by.
func (s *Signer) KeyID() string { return s.ID }

// PublicKey returns the public half of s.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.Public }

// Sign returns the Ed25519 signature of message (pure Ed25519, no
// pre-hash), unless ctx is done.
func (s *Signer) Sign(ctx context.Context, message []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sig, err := s.Signer.SignMessage(bytes.NewReader(message), options.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("key %s: sign: %w", s.ID, err)
	}
	return sig, nil
}

// ID returns the key id of pub: lowercase hex SHA-256 of its DER SPKI.
func ID(pub ed25519.PublicKey) (string, error) {
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return "", fmt.Errorf("key: %w", err)
	}
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:]), nil
}

// PublicPEM returns pub as a PKIX "PUBLIC KEY" PEM block.
func PublicPEM(pub ed25519.PublicKey) ([]byte, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	return b, nil
}

// ParsePrivate parses a PKCS#8 PEM Ed25519 private key. name labels the
// source (a file name, env:VAR) in errors; the key text is never echoed.
func ParsePrivate(pemBytes []byte, name string) (ed25519.PrivateKey, error) {
	if len(pemBytes) > MaxPEMSize {
		return nil, fmt.Errorf("key %s: larger than %d bytes", name, MaxPEMSize)
	}
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("key %s: no PEM block found", name)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("key %s: unexpected data after the PEM block", name)
	}
	if block.Type != string(cryptoutils.PrivateKeyPEMType) {
		return nil, fmt.Errorf("key %s: PEM type %q, want %q (PKCS#8)", name, sanitize(block.Type), cryptoutils.PrivateKeyPEMType)
	}
	// cryptoutils.UnmarshalPEMToPrivateKey would also accept PKCS#1, SEC1
	// and encrypted blocks; only PKCS#8 is part of the format, so parse the
	// DER ourselves. x509 errors describe structure, never content.
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("key %s: invalid PKCS#8 private key", name)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key %s: %w", name, ErrNotEd25519)
	}
	return priv, nil
}

// ParsePublic parses a PKIX PEM Ed25519 public key.
func ParsePublic(pemBytes []byte, name string) (ed25519.PublicKey, error) {
	if len(pemBytes) > MaxPEMSize {
		return nil, fmt.Errorf("public key %s: larger than %d bytes", name, MaxPEMSize)
	}
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("public key %s: no PEM block found", name)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("public key %s: unexpected data after the PEM block", name)
	}
	if block.Type != string(cryptoutils.PublicKeyPEMType) {
		return nil, fmt.Errorf("public key %s: PEM type %q, want %q", name, sanitize(block.Type), cryptoutils.PublicKeyPEMType)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key %s: invalid SubjectPublicKeyInfo", name)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key %s: %w", name, ErrNotEd25519)
	}
	return pub, nil
}

// NewSigner wraps priv in a sigstore signer.
func NewSigner(priv ed25519.PrivateKey) (*Signer, error) {
	s, err := signature.LoadSigner(priv, crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	id, err := ID(pub)
	if err != nil {
		return nil, err
	}
	return &Signer{Signer: s, ID: id, Public: pub}, nil
}

// Load reads a private key from ref: "env:NAME" reads the PEM text from
// the environment variable NAME (for CI secrets), anything else is a file.
func Load(ref string) (*Signer, error) {
	var (
		b   []byte
		err error
	)
	if name, ok := strings.CutPrefix(ref, EnvPrefix); ok {
		v, set := os.LookupEnv(name)
		if !set || v == "" {
			return nil, fmt.Errorf("key %s: environment variable is not set", ref)
		}
		b = []byte(v)
	} else {
		b, err = readBounded(ref)
		if err != nil {
			return nil, err
		}
	}
	priv, err := ParsePrivate(b, ref)
	if err != nil {
		return nil, err
	}
	return NewSigner(priv)
}

// LoadPublic reads a public key PEM file.
func LoadPublic(path string) (ed25519.PublicKey, []byte, error) {
	b, err := readBounded(path)
	if err != nil {
		return nil, nil, err
	}
	pub, err := ParsePublic(b, path)
	if err != nil {
		return nil, nil, err
	}
	return pub, b, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := bounded.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	defer f.Close()
	b, err := bounded.ReadAll(f, MaxPEMSize)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	return b, nil
}

// PublicPath is where Generate puts the public key of a private key file:
// key.pem → key.pub.pem.
func PublicPath(privPath string) string {
	return strings.TrimSuffix(privPath, ".pem") + ".pub.pem"
}

// Generate creates a new key pair and writes the private key to privPath
// (mode 0600) and the public key to PublicPath(privPath) (mode 0644). It
// never overwrites: an existing file at either path is an error wrapping
// fs.ErrExist. It returns the key id.
func Generate(privPath string) (id string, err error) { return generate(privPath, false) }

// GenerateReplacing is Generate that atomically replaces existing files
// at either path (each is written whole or not at all).
func GenerateReplacing(privPath string) (id string, err error) { return generate(privPath, true) }

func generate(privPath string, replace bool) (id string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("key: %w", err)
	}
	privPEM, err := cryptoutils.MarshalPrivateKeyToPEM(priv)
	if err != nil {
		return "", fmt.Errorf("key: %w", err)
	}
	pubPEM, err := PublicPEM(pub)
	if err != nil {
		return "", err
	}
	pubPath := PublicPath(privPath)
	if pubPath == privPath {
		return "", fmt.Errorf("key %s: cannot derive a distinct public key path", privPath)
	}
	if replace {
		if err := durable.WriteFile(privPath, privPEM, 0o600); err != nil {
			return "", fmt.Errorf("key %s: %w", privPath, err)
		}
		if err := durable.WriteFile(pubPath, pubPEM, 0o644); err != nil {
			return "", fmt.Errorf("key %s: %w", pubPath, err)
		}
		return ID(pub)
	}
	if _, err := os.Lstat(pubPath); err == nil {
		return "", fmt.Errorf("key %s: %w", pubPath, os.ErrExist)
	}
	if err := writeExclusive(privPath, privPEM, 0o600); err != nil {
		return "", err
	}
	if err := writeExclusive(pubPath, pubPEM, 0o644); err != nil {
		os.Remove(privPath)
		return "", err
	}
	return ID(pub)
}

// writeExclusive writes b to a temp file in the target directory, fsyncs it
// and links it into place, failing if the target exists.
func writeExclusive(path string, b []byte, mode os.FileMode) error {
	if err := durable.CreateExclusive(path, b, mode); err != nil {
		return fmt.Errorf("key %s: %w", path, err)
	}
	return nil
}

// sanitize keeps a PEM type printable and short for error messages.
func sanitize(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}
