package handoff

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/printable"
)

// KeyVerifiers trusts exactly one Ed25519 key: the job's own signing key,
// which signed the hand-off (or the plan, or a shard) in an earlier job.
type KeyVerifiers struct {
	ID  string
	Pub ed25519.PublicKey
}

// Verifier returns the key if id is its id.
func (k KeyVerifiers) Verifier(id string) (envelope.TrustedKey, error) {
	if id != k.ID {
		return nil, fmt.Errorf("key %s is not the job's signing key %s", printable.ClipQuoted(id), k.ID)
	}
	return k, nil
}

// KeyID is the key's id.
func (k KeyVerifiers) KeyID() string { return k.ID }

// Verify reports whether sig is the key's signature of message.
func (k KeyVerifiers) Verify(message, sig []byte) bool {
	return len(sig) == ed25519.SignatureSize && ed25519.Verify(k.Pub, message, sig)
}

// CheckAt accepts every time and identity: the job's own key is trusted.
func (KeyVerifiers) CheckAt(time.Time, string) error { return nil }

// CheckWitnessed accepts every time: a key signature has no witness.
func (KeyVerifiers) CheckWitnessed(time.Time) error { return nil }
