// Package trust is the trust store (trust.json) that decides which keys
// may sign evidence bundles and checkpoints, and when.
//
// A key is active, retired or revoked. Rotation adds a new active key and
// retires the old one: bundles the old key signed up to its retirement
// still verify. Revocation rejects bundles signed at or after revoked_at,
// or every bundle of the key when no time is given. A key is only valid
// for signing times inside [not_before, not_after]. The store is rewritten
// atomically (temp file, fsync, rename).
//
// A *Store is one envelope.Verifiers: Verifier looks a key up by id, and
// the *Key it returns verifies Ed25519 signatures and applies its status,
// window and identity (CheckAt, CheckWitnessed).
//
// The store may also hold keyless signing identities ("identities",
// identity.go): identity policies for keyless bundles' certificates, with
// the same lifecycle, judged at the witnessed time (Identity.CheckWitnessed).
// The package does not match certificates and does not import
// bundle/sigstore; cmd/proofgate turns them into its identity policies.
package trust

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Version is the trust.json format version.
const Version = 1

// Bounds on a trust store.
const (
	MaxSize     = 1 << 20
	MaxKeys     = 1000
	MaxIdentity = 256
)

// Status is a key's lifecycle status.
type Status string

// Key statuses.
const (
	Active  Status = "active"
	Retired Status = "retired"
	Revoked Status = "revoked"
)

// Reason is the typed cause of a refused key.
type Reason string

// Reasons a key is refused for a signature.
const (
	UnknownKey        Reason = "unknown-key"
	KeyRevoked        Reason = "key-revoked"
	KeyNotValidAtTime Reason = "key-not-valid-at-signing-time"
	IdentityMismatch  Reason = "identity-mismatch"
)

// KeyError is a key, or a keyless signing identity, refused for a
// signature.
type KeyError struct {
	Reason Reason
	KeyID  string
	// Identity is the id of the trust store identity refused (Identity's
	// CheckWitnessed), "" for a key.
	Identity string
	Detail   string
}

func (e *KeyError) Error() string {
	if e.Identity != "" {
		return fmt.Sprintf("identity %s: %s: %s", e.Identity, e.Reason, e.Detail)
	}
	return fmt.Sprintf("key %s: %s: %s", e.KeyID, e.Reason, e.Detail)
}

// Key is one trusted public key.
type Key struct {
	ID        string     `json:"id"`
	PublicKey string     `json:"public_key"` // PKIX PEM
	Identity  string     `json:"identity,omitempty"`
	Status    Status     `json:"status"`
	NotBefore *time.Time `json:"not_before,omitempty"`
	NotAfter  *time.Time `json:"not_after,omitempty"`
	RetiredAt *time.Time `json:"retired_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`

	pub ed25519.PublicKey
}

// Public returns the parsed public key.
func (k *Key) Public() ed25519.PublicKey { return k.pub }

// KeyID returns the key's id.
func (k *Key) KeyID() string { return k.ID }

// Verify reports whether sig is the key's Ed25519 signature of message.
// Status and validity are CheckAt's.
func (k *Key) Verify(message, sig []byte) bool {
	return len(k.pub) == ed25519.PublicKeySize && len(sig) == ed25519.SignatureSize && ed25519.Verify(k.pub, message, sig)
}

// Store is the content of trust.json.
type Store struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
	// Identities are the keyless signing identities trusted (identity.go).
	Identities []Identity `json:"identities,omitempty"`
}

// New returns an empty store.
func New() *Store { return &Store{Version: Version, Keys: []Key{}} }

var idRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Parse decodes and validates trust.json. name labels errors.
func Parse(b []byte, name string) (*Store, error) {
	if len(b) > MaxSize {
		return nil, fmt.Errorf("trust store %s: larger than %d bytes", name, MaxSize)
	}
	var s Store
	if err := strictjson.Decode(b, &s); err != nil {
		return nil, fmt.Errorf("trust store %s: %w", name, err)
	}
	if s.Version != Version {
		return nil, fmt.Errorf("trust store %s: version: %d, want %d", name, s.Version, Version)
	}
	if len(s.Keys) > MaxKeys {
		return nil, fmt.Errorf("trust store %s: keys: more than %d", name, MaxKeys)
	}
	if s.Keys == nil {
		s.Keys = []Key{}
	}
	seen := map[string]bool{}
	for i := range s.Keys {
		k := &s.Keys[i]
		field := fmt.Sprintf("trust store %s: keys[%d]", name, i)
		if err := k.validate(field); err != nil {
			return nil, err
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("%s.id: duplicate key id %s", field, k.ID)
		}
		seen[k.ID] = true
	}
	if err := s.validateIdentities("trust store " + name); err != nil {
		return nil, err
	}
	return &s, nil
}

func (k *Key) validate(field string) error {
	if !idRE.MatchString(k.ID) {
		return fmt.Errorf("%s.id: not 64 lowercase hex digits", field)
	}
	pub, err := key.ParsePublic([]byte(k.PublicKey), field+".public_key")
	if err != nil {
		return err
	}
	id, err := key.ID(pub)
	if err != nil {
		return err
	}
	if id != k.ID {
		return fmt.Errorf("%s.id: %s is not the id of its public_key (%s)", field, k.ID, id)
	}
	if len(k.Identity) > MaxIdentity {
		return fmt.Errorf("%s.identity: longer than %d bytes", field, MaxIdentity)
	}
	if err := validateLifecycle(field, "key", k.lifecycle()); err != nil {
		return err
	}
	k.pub = pub
	return nil
}

// lifecycle is a key's or an identity's status and times.
type lifecycle struct {
	status                                Status
	notBefore, notAfter, retired, revoked *time.Time
}

func (k *Key) lifecycle() lifecycle {
	return lifecycle{k.Status, k.NotBefore, k.NotAfter, k.RetiredAt, k.RevokedAt}
}

// validateLifecycle refuses an unknown status, times the status does not
// allow and an empty window; what names "key" or "identity".
func validateLifecycle(field, what string, l lifecycle) error {
	switch l.status {
	case Active:
		if l.retired != nil || l.revoked != nil {
			return fmt.Errorf("%s: an active %s has no retired_at or revoked_at", field, what)
		}
	case Retired:
		if l.revoked != nil {
			return fmt.Errorf("%s.revoked_at: set on a %s that is not revoked", field, what)
		}
	case Revoked:
	default:
		return fmt.Errorf("%s.status: %q, want active, retired or revoked", field, l.status)
	}
	if l.notBefore != nil && l.notAfter != nil && l.notAfter.Before(*l.notBefore) {
		return fmt.Errorf("%s.not_after: before not_before", field)
	}
	return nil
}

// Load reads and validates the store at path.
func Load(path string) (*Store, error) {
	f, err := bounded.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("trust store %s: %w", path, err)
	}
	return Parse(b, path)
}

// LoadOrNew is Load, returning an empty store when path does not exist.
func LoadOrNew(path string) (*Store, error) {
	s, err := Load(path)
	if errors.Is(err, os.ErrNotExist) {
		return New(), nil
	}
	return s, err
}

// Find returns the key with id, or nil.
func (s *Store) Find(id string) *Key {
	for i := range s.Keys {
		if s.Keys[i].ID == id {
			return &s.Keys[i]
		}
	}
	return nil
}

// Add adds pubPEM as an active key and returns its id. Adding a key that is
// already present is an error.
func (s *Store) Add(pubPEM []byte, identity string, notBefore, notAfter *time.Time) (string, error) {
	pub, err := key.ParsePublic(pubPEM, "public key")
	if err != nil {
		return "", err
	}
	id, err := key.ID(pub)
	if err != nil {
		return "", err
	}
	if s.Find(id) != nil {
		return "", fmt.Errorf("trust store: key %s is already present", id)
	}
	if len(s.Keys) >= MaxKeys {
		return "", fmt.Errorf("trust store: already holds %d keys", MaxKeys)
	}
	canonical, err := key.PublicPEM(pub)
	if err != nil {
		return "", err
	}
	k := Key{ID: id, PublicKey: string(canonical), Identity: identity, Status: Active,
		NotBefore: utc(notBefore), NotAfter: utc(notAfter)}
	if err := k.validate(fmt.Sprintf("trust store: keys[%d]", len(s.Keys))); err != nil {
		return "", err
	}
	s.Keys = append(s.Keys, k)
	return id, nil
}

// Retire marks key id retired as of at: signatures made after at are
// refused, earlier ones still verify. A revoked key stays revoked.
func (s *Store) Retire(id string, at time.Time) error {
	k := s.Find(id)
	if k == nil {
		return &KeyError{Reason: UnknownKey, KeyID: id, Detail: "not in the trust store"}
	}
	if k.Status == Revoked {
		return fmt.Errorf("trust store: key %s is revoked; it cannot be retired", id)
	}
	k.Status = Retired
	k.RetiredAt = utc(&at)
	return nil
}

// Revoke marks key id revoked: signatures made at or after at are refused,
// and every signature when at is nil. Revoking again can only move the
// time earlier (or drop it).
func (s *Store) Revoke(id string, at *time.Time) error {
	k := s.Find(id)
	if k == nil {
		return &KeyError{Reason: UnknownKey, KeyID: id, Detail: "not in the trust store"}
	}
	if k.Status == Revoked && k.RevokedAt == nil {
		return nil
	}
	if k.Status == Revoked && at != nil && k.RevokedAt.Before(*at) {
		return fmt.Errorf("trust store: key %s is already revoked at %s", id, k.RevokedAt.Format(time.RFC3339))
	}
	k.Status = Revoked
	k.RevokedAt = utc(at)
	return nil
}

// Check returns the public key of id if it may have signed at signedAt on
// behalf of identity (the bundle's repository, "" when unknown). A refused
// key is a *KeyError.
func (s *Store) Check(id string, signedAt time.Time, identity string) (ed25519.PublicKey, error) {
	k, err := s.Lookup(id)
	if err != nil {
		return nil, err
	}
	return k.pub, k.CheckAt(signedAt, identity)
}

// Verifier returns the key with id as an envelope.TrustedKey, or an
// UnknownKey *KeyError.
func (s *Store) Verifier(id string) (envelope.TrustedKey, error) {
	k, err := s.Lookup(id)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Lookup returns the key with id or an UnknownKey error.
func (s *Store) Lookup(id string) (*Key, error) {
	k := s.Find(id)
	if k == nil || k.pub == nil {
		return nil, &KeyError{Reason: UnknownKey, KeyID: id, Detail: "not in the trust store"}
	}
	return k, nil
}

// CheckAt applies the key's status, validity window and identity to a
// signature made at signedAt.
func (k *Key) CheckAt(signedAt time.Time, identity string) error {
	if r, detail := k.lifecycle().at(signedAt, "signed at", "key"); r != "" {
		return &KeyError{Reason: r, KeyID: k.ID, Detail: detail}
	}
	if k.Identity != "" && k.Identity != identity {
		return &KeyError{Reason: IdentityMismatch, KeyID: k.ID,
			Detail: fmt.Sprintf("key is for %q, bundle is for %q", k.Identity, identity)}
	}
	return nil
}

// at applies the status and window to a signature made (or witnessed) at
// t, and returns the reason and detail of a refusal, or "". verb words
// the time ("signed at"), what the thing refused ("key").
func (l lifecycle) at(t time.Time, verb, what string) (Reason, string) {
	at := verb + " " + t.UTC().Format(time.RFC3339Nano)
	if l.status == Revoked {
		if l.revoked == nil {
			return KeyRevoked, "revoked for every signature"
		}
		if !t.Before(*l.revoked) {
			return KeyRevoked, fmt.Sprintf("%s, revoked at %s", at, l.revoked.Format(time.RFC3339Nano))
		}
	}
	if l.notBefore != nil && t.Before(*l.notBefore) {
		return KeyNotValidAtTime, fmt.Sprintf("%s, before not_before %s", at, l.notBefore.Format(time.RFC3339Nano))
	}
	if l.notAfter != nil && t.After(*l.notAfter) {
		return KeyNotValidAtTime, fmt.Sprintf("%s, after not_after %s", at, l.notAfter.Format(time.RFC3339Nano))
	}
	if l.status == Retired && l.retired == nil {
		// No retirement time (a hand-edited store): nothing it signed is
		// known to predate retirement.
		return KeyNotValidAtTime, "retired, with no retired_at"
	}
	if l.status == Retired && t.After(*l.retired) {
		return KeyNotValidAtTime, fmt.Sprintf("%s, after the %s was retired at %s", at, what, l.retired.Format(time.RFC3339Nano))
	}
	return "", ""
}

// CheckWitnessed refuses the key for a signature that a witness the
// signer does not control (an artifact's created_at) saw only at or after
// the key was retired or revoked: whatever signing time the signature
// claims, it was made public too late.
func (k *Key) CheckWitnessed(at time.Time) error {
	w := at.UTC().Format(time.RFC3339Nano)
	if k.Status == Revoked && k.RevokedAt != nil && !at.Before(*k.RevokedAt) {
		return &KeyError{Reason: KeyRevoked, KeyID: k.ID,
			Detail: fmt.Sprintf("the bundle was first seen at %s, after the key was revoked at %s", w, k.RevokedAt.Format(time.RFC3339Nano))}
	}
	if k.Status == Retired && k.RetiredAt != nil && at.After(*k.RetiredAt) {
		return &KeyError{Reason: KeyNotValidAtTime, KeyID: k.ID,
			Detail: fmt.Sprintf("the bundle was first seen at %s, after the key was retired at %s", w, k.RetiredAt.Format(time.RFC3339Nano))}
	}
	return nil
}

// Marshal returns the store as indented JSON with keys sorted by id.
func (s *Store) Marshal() ([]byte, error) {
	c := *s
	c.Keys = append([]Key(nil), s.Keys...)
	sort.Slice(c.Keys, func(i, j int) bool { return c.Keys[i].ID < c.Keys[j].ID })
	c.Identities = append([]Identity(nil), s.Identities...)
	sort.Slice(c.Identities, func(i, j int) bool { return c.Identities[i].ID < c.Identities[j].ID })
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	return append(b, '\n'), nil
}

// Save writes the store to path atomically: a temp file in the same
// directory, fsync, rename, fsync of the directory.
func (s *Store) Save(path string) error {
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	if err := durable.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("trust store %s: %w", path, err)
	}
	return nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
