// Package sigtest holds in-test implementations of bundle/envelope's
// seams: a Signer over crypto/ed25519 alone (a second implementation
// beside bundle/key's sigstore-backed one) and Verifiers whose keys count
// their calls and can be told to forge or to refuse, so tests prove that
// bundles and checkpoints are signed and verified through the interfaces.
// keyless.go adds a keyless pair without Sigstore (a MaterialSigner and
// MaterialVerifiers over a test CA), whose refusals name the reasons
// bundle/sigstore's do.
package sigtest

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
)

// Signer signs with an Ed25519 key through crypto/ed25519 directly.
type Signer struct {
	Priv ed25519.PrivateKey
	id   string

	mu    sync.Mutex
	calls int
}

// NewSigner returns the signer of the Ed25519 key with the 32-byte seed
// made of b repeated.
func NewSigner(b byte) *Signer {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b
	}
	priv := ed25519.NewKeyFromSeed(seed)
	id, err := key.ID(priv.Public().(ed25519.PublicKey))
	if err != nil {
		panic(err)
	}
	return &Signer{Priv: priv, id: id}
}

// KeyID returns the key id of the signer's public key.
func (s *Signer) KeyID() string { return s.id }

// Sign signs message, counting the call.
func (s *Signer) Sign(ctx context.Context, message []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return ed25519.Sign(s.Priv, message), nil
}

// Calls is the number of signatures made.
func (s *Signer) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Public returns the signer's public key.
func (s *Signer) Public() ed25519.PublicKey { return s.Priv.Public().(ed25519.PublicKey) }

// Key returns a trusted key for the signer's public key.
func (s *Signer) Key() *Key { return &Key{ID: s.id, Pub: s.Public()} }

// Key is a TrustedKey that records how it was used.
type Key struct {
	ID  string
	Pub ed25519.PublicKey
	// Forge makes Verify accept every signature.
	Forge bool
	// Refuse, when set, is what CheckAt and CheckWitnessed return.
	Refuse error

	mu         sync.Mutex
	verified   int
	checkedAt  []time.Time
	identities []string
	witnessed  []time.Time
}

// KeyID returns k.ID.
func (k *Key) KeyID() string { return k.ID }

// Verify checks sig with crypto/ed25519, or accepts it when k.Forge.
func (k *Key) Verify(message, sig []byte) bool {
	k.mu.Lock()
	k.verified++
	k.mu.Unlock()
	if k.Forge {
		return true
	}
	return len(sig) == ed25519.SignatureSize && ed25519.Verify(k.Pub, message, sig)
}

// CheckAt records the signing time and identity and returns k.Refuse.
func (k *Key) CheckAt(signedAt time.Time, identity string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.checkedAt = append(k.checkedAt, signedAt)
	k.identities = append(k.identities, identity)
	return k.Refuse
}

// CheckWitnessed records the witness time and returns k.Refuse.
func (k *Key) CheckWitnessed(at time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.witnessed = append(k.witnessed, at)
	return k.Refuse
}

// Verified is the number of Verify calls.
func (k *Key) Verified() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.verified
}

// CheckedAt returns the signing times and identities CheckAt was asked about.
func (k *Key) CheckedAt() ([]time.Time, []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]time.Time(nil), k.checkedAt...), append([]string(nil), k.identities...)
}

// Witnessed returns the witness times CheckWitnessed was asked about.
func (k *Key) Witnessed() []time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]time.Time(nil), k.witnessed...)
}

// Verifiers maps key ids to keys. A key filed under another id than its
// own models a lookup that returns the wrong key.
type Verifiers map[string]*Key

// ErrUnknown is the error for a key id not in the map.
var ErrUnknown = errors.New("sigtest: unknown key")

// Verifier returns the key filed under id.
func (v Verifiers) Verifier(id string) (envelope.TrustedKey, error) {
	k, ok := v[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, id)
	}
	return k, nil
}

// Of returns Verifiers holding the keys, each under its own id.
func Of(keys ...*Key) Verifiers {
	v := Verifiers{}
	for _, k := range keys {
		v[k.ID] = k
	}
	return v
}
