package sigtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// A keyless pair without Sigstore: a test "CA" (an Ed25519 key) signs a
// small certificate binding an ephemeral Ed25519 key to a signer, a
// repository and a witnessed time; the material is the canonical JSON
//
//	{"ca_sig":"<b64 CA signature of the canonical cert>",
//	 "cert":{"public_key":"<b64 32 bytes>","repo":"owner/name","signer":"…","witnessed_at":"<RFC 3339>"},
//	 "envelope":{"payload":"…","payloadType":"…","sig":"…"},"v":1}
//
// and the envelope must be the archive's (its keyid left out) and, as
// sigstore-go requires, of payload type InTotoType. Refusals are *Refused
// errors naming the reasons bundle/sigstore's do.

// InTotoType is the only DSSE payload type KeylessVerifiers accept: the
// one sigstore-go verifies ("unsupported media type" otherwise).
const InTotoType = "application/vnd.in-toto+json"

// MaxMaterial bounds the material KeylessVerifiers read.
const MaxMaterial = 64 << 10

// Material is the verification material of a KeylessSigner.
type Material struct {
	V        int         `json:"v"`
	Cert     Cert        `json:"cert"`
	CASig    string      `json:"ca_sig"`
	Envelope MaterialEnv `json:"envelope"`
}

// Cert binds a key to a signer, a repository and a witnessed time.
type Cert struct {
	PublicKey   string `json:"public_key"` // standard base64 of the Ed25519 key
	Signer      string `json:"signer"`
	Repo        string `json:"repo"`         // "" = no repository
	WitnessedAt string `json:"witnessed_at"` // RFC 3339; "" = not witnessed
}

// MaterialEnv is the envelope the material carries, without keyid.
type MaterialEnv struct {
	Payload     string `json:"payload"`
	PayloadType string `json:"payloadType"`
	Sig         string `json:"sig"`
}

// Refused is a refused material or key, with the reason bundle/sigstore
// would give ("certificate-invalid", "material-mismatch", …).
type Refused struct {
	Reason string
	Detail string
}

func (e *Refused) Error() string { return "sigtest keyless: " + e.Reason + ": " + e.Detail }

// RefusalReason names the reason, as bundle/sigstore's *VerifyError does.
func (e *Refused) RefusalReason() string { return e.Reason }

// CA is the test certificate authority and witness.
type CA struct{ Priv ed25519.PrivateKey }

// NewCA returns the CA whose key is the seed of b repeated.
func NewCA(b byte) *CA {
	return &CA{Priv: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))}
}

// Seal signs m.Cert into m.CASig and returns m as canonical JSON.
func (ca *CA) Seal(m *Material) []byte {
	c, err := canon.Marshal(&m.Cert)
	if err != nil {
		panic(err)
	}
	m.CASig = base64.StdEncoding.EncodeToString(ed25519.Sign(ca.Priv, c))
	b, err := canon.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// KeylessSigner is an envelope.MaterialSigner whose key the CA vouches
// for, witnessed at Witnessed.
type KeylessSigner struct {
	CA        *CA
	Priv      ed25519.PrivateKey
	Signer    string
	Repo      string
	Witnessed time.Time

	mu    sync.Mutex
	calls int
}

// NewKeylessSigner returns a signer with the key of seed b repeated,
// signer "https://github.com/acme/widget/.github/workflows/release.yml@refs/heads/main",
// repository acme/widget, witnessed at witnessed.
func (ca *CA) NewKeylessSigner(b byte, witnessed time.Time) *KeylessSigner {
	return &KeylessSigner{CA: ca, Priv: ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize)),
		Signer: "https://github.com/acme/widget/.github/workflows/release.yml@refs/heads/main", Repo: "acme/widget", Witnessed: witnessed}
}

// KeyID is KeylessPrefix and the key id of the public key.
func (s *KeylessSigner) KeyID() string {
	id, err := key.ID(s.Priv.Public().(ed25519.PublicKey))
	if err != nil {
		panic(err)
	}
	return envelope.KeylessPrefix + id
}

// SignEnvelope signs PAE and returns the signature and the sealed material.
func (s *KeylessSigner) SignEnvelope(ctx context.Context, payloadType string, payload []byte) ([]byte, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	sig := ed25519.Sign(s.Priv, envelope.PAE(payloadType, payload))
	w := ""
	if !s.Witnessed.IsZero() {
		w = s.Witnessed.UTC().Format(time.RFC3339Nano)
	}
	m := &Material{V: 1, Cert: Cert{PublicKey: base64.StdEncoding.EncodeToString(s.Priv.Public().(ed25519.PublicKey)),
		Signer: s.Signer, Repo: s.Repo, WitnessedAt: w},
		Envelope: MaterialEnv{Payload: base64.StdEncoding.EncodeToString(payload), PayloadType: payloadType,
			Sig: base64.StdEncoding.EncodeToString(sig)}}
	return sig, s.CA.Seal(m), nil
}

// Calls is the number of envelopes signed.
func (s *KeylessSigner) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// KeylessVerifiers is an envelope.MaterialVerifiers trusting one CA.
type KeylessVerifiers struct {
	CA ed25519.PublicKey
	// Valid, when set, is what the keys' CheckWitnessed return (an
	// identity's lifecycle, e.g. a trust.Identity's CheckWitnessed).
	Valid func(witnessed time.Time) error
	// CheckAtErr, when set, is what the keys' CheckAt return.
	CheckAtErr error

	mu   sync.Mutex
	keys []*WitnessedKey
}

// Verifiers returns verifiers trusting ca.
func (ca *CA) Verifiers() *KeylessVerifiers {
	return &KeylessVerifiers{CA: ca.Priv.Public().(ed25519.PublicKey)}
}

// Keys returns the keys VerifierFor handed out.
func (v *KeylessVerifiers) Keys() []*WitnessedKey {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]*WitnessedKey(nil), v.keys...)
}

func refused(reason, format string, args ...any) error {
	return &Refused{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// VerifierFor checks the material: bounded, strict and canonical
// (malformed), the CA's signature of the cert (certificate-invalid), the
// key's keyless id is keyID and its envelope is env's (material-mismatch),
// the payload type InTotoType (malformed, as bundle/sigstore refuses what
// sigstore-go refuses), a witnessed time (timestamp-invalid).
func (v *KeylessVerifiers) VerifierFor(keyID string, env, material []byte) (envelope.WitnessedKey, error) {
	var m Material
	if len(material) > MaxMaterial {
		return nil, refused("malformed", "larger than %d bytes", MaxMaterial)
	}
	if err := strictjson.Decode(material, &m); err != nil || m.V != 1 {
		return nil, refused("malformed", "not a v1 material: %v", err)
	}
	c, err := canon.Marshal(&m.Cert)
	sig, err2 := base64.StdEncoding.Strict().DecodeString(m.CASig)
	if err != nil || err2 != nil || !ed25519.Verify(v.CA, c, sig) {
		return nil, refused("certificate-invalid", "the cert is not signed by the trusted CA")
	}
	pub, err := base64.StdEncoding.Strict().DecodeString(m.Cert.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, refused("malformed", "cert public_key: not an Ed25519 key")
	}
	id, err := key.ID(ed25519.PublicKey(pub))
	if err != nil || envelope.KeylessPrefix+id != keyID {
		return nil, refused("material-mismatch", "the cert's key is not keyid %s", keyID)
	}
	var e envelope.Envelope
	if err := strictjson.Decode(env, &e); err != nil || len(e.Signatures) != 1 {
		return nil, refused("malformed", "envelope: %v", err)
	}
	if got := (MaterialEnv{Payload: e.Payload, PayloadType: e.PayloadType, Sig: e.Signatures[0].Sig}); got != m.Envelope {
		return nil, refused("material-mismatch", "the material's envelope is not the archive's")
	}
	if e.PayloadType != InTotoType {
		return nil, refused("malformed", "payloadType %q: sigstore-go verifies only %s envelopes (unsupported media type)", e.PayloadType, InTotoType)
	}
	k := &WitnessedKey{ID: keyID, Pub: pub, Cert: m.Cert, valid: v.Valid, checkAtErr: v.CheckAtErr}
	if m.Cert.WitnessedAt != "" {
		if k.At, err = time.Parse(time.RFC3339Nano, m.Cert.WitnessedAt); err != nil {
			return nil, refused("timestamp-invalid", "witnessed_at: not RFC 3339")
		}
	}
	v.mu.Lock()
	v.keys = append(v.keys, k)
	v.mu.Unlock()
	return k, nil
}

// WitnessedKey is the key a material vouches for; it records its use.
type WitnessedKey struct {
	ID   string
	Pub  ed25519.PublicKey
	Cert Cert
	At   time.Time // zero when the material has no witnessed time

	valid      func(time.Time) error
	checkAtErr error

	mu         sync.Mutex
	checkedAt  []time.Time
	identities []string
	witnessed  []time.Time
}

// KeyID returns the keyless keyid.
func (k *WitnessedKey) KeyID() string { return k.ID }

// Verify checks an Ed25519 signature with crypto/ed25519.
func (k *WitnessedKey) Verify(message, sig []byte) bool {
	return len(sig) == ed25519.SignatureSize && ed25519.Verify(k.Pub, message, sig)
}

// CheckAt records its arguments; it refuses a payload identity other than
// "repo:" + the cert's repository (identity-mismatch), then returns the
// verifiers' CheckAtErr. The signing time's plausibility is the bundle's.
func (k *WitnessedKey) CheckAt(signedAt time.Time, identity string) error {
	k.mu.Lock()
	k.checkedAt = append(k.checkedAt, signedAt)
	k.identities = append(k.identities, identity)
	k.mu.Unlock()
	if identity != "" && k.Cert.Repo != "" && identity != "repo:"+k.Cert.Repo {
		return refused("identity-mismatch", "the cert is for repository %s, the bundle names %s", k.Cert.Repo, identity)
	}
	return k.checkAtErr
}

// CheckWitnessed records at and returns the verifiers' Valid(at).
func (k *WitnessedKey) CheckWitnessed(at time.Time) error {
	k.mu.Lock()
	k.witnessed = append(k.witnessed, at)
	k.mu.Unlock()
	if k.valid != nil {
		return k.valid(at)
	}
	return nil
}

// WitnessedAt is the cert's witnessed time.
func (k *WitnessedKey) WitnessedAt() time.Time { return k.At }

// Signer is the cert's signer.
func (k *WitnessedKey) Signer() string { return k.Cert.Signer }

// CheckedAt returns the signing times and identities CheckAt was asked about.
func (k *WitnessedKey) CheckedAt() ([]time.Time, []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]time.Time(nil), k.checkedAt...), append([]string(nil), k.identities...)
}

// Witnessed returns the times CheckWitnessed was asked about.
func (k *WitnessedKey) Witnessed() []time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]time.Time(nil), k.witnessed...)
}
