// Package canon produces RFC 8785 (JCS) canonical JSON and the sha256 digests
// that ProofGate computes over it: the contract hash, event hashes, the
// verification digest and profile hashes all use Marshal and Digest.
package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Marshal returns the RFC 8785 canonical JSON encoding of v.
func Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	return Transform(b)
}

// Transform canonicalises JSON text.
func Transform(b []byte) ([]byte, error) {
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("canon: %w", err)
	}
	return out, nil
}

// Digest returns "sha256:" + hex SHA-256 of the canonical JSON of v.
func Digest(v any) (string, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", err
	}
	return SumBytes(b), nil
}

// SumBytes returns "sha256:" + hex SHA-256 of b.
func SumBytes(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
