package runtime

import (
	"crypto/sha256"
	"encoding/hex"
)

// StdinProfile is what a provider's attestation profile records, under
// the key "stdin", about a spec's Stdin: its digest ("sha256:" + hex) and
// length, never the bytes. Providers add it only when Stdin is non-nil, so
// the profile (and profile hash) of a spec without stdin is unchanged.
func StdinProfile(stdin []byte) map[string]any {
	sum := sha256.Sum256(stdin)
	return map[string]any{"sha256": "sha256:" + hex.EncodeToString(sum[:]), "bytes": int64(len(stdin))}
}
