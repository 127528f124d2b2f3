package envelope_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/internal/canon"
)

// TestParseKeyidForms: a key id needs a 64-byte signature, a keyless
// keyid 1 to MaxMaterialSignature bytes; any other keyid is malformed.
func TestParseKeyidForms(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	sig := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	for _, c := range []struct {
		keyid, sig string
		ok         bool
	}{
		{hex, sig(64), true},
		{hex, sig(63), false},
		{hex, sig(72), false},
		{envelope.KeylessPrefix + hex, sig(1), true},
		{envelope.KeylessPrefix + hex, sig(72), true},
		{envelope.KeylessPrefix + hex, sig(64), true},
		{envelope.KeylessPrefix + hex, sig(envelope.MaxMaterialSignature), true},
		{envelope.KeylessPrefix + hex, sig(envelope.MaxMaterialSignature + 1), false},
		{envelope.KeylessPrefix + hex, "", false},
		{envelope.KeylessPrefix + hex, "AAAA=", false},
		{envelope.KeylessPrefix + strings.ToUpper(hex), sig(72), false},
		{envelope.KeylessPrefix + hex[:63], sig(72), false},
		{"Keyless:" + hex, sig(72), false},
		{"keyless:" + hex + "0", sig(72), false},
		{strings.ToUpper(hex), sig(64), false},
		{"", sig(64), false},
		{"00", sig(64), false},
	} {
		e := envelope.Envelope{PayloadType: typ, Payload: base64.StdEncoding.EncodeToString([]byte("p")),
			Signatures: []envelope.Signature{{KeyID: c.keyid, Sig: c.sig}}}
		b, _ := json.Marshal(&e)
		_, _, err := envelope.Parse(b, typ, "e")
		if (err == nil) != c.ok {
			t.Errorf("keyid %q sig %d chars: %v, want ok=%v", c.keyid, len(c.sig), err, c.ok)
		}
	}
}

// ktyp is the payload type of keyless envelopes (sigtest, as sigstore-go,
// verifies no other).
const ktyp = sigtest.InTotoType

// otherKey is a MaterialVerifiers whose key has another keyid.
type otherKey struct{ k envelope.WitnessedKey }

func (o otherKey) VerifierFor(string, []byte, []byte) (envelope.WitnessedKey, error) { return o.k, nil }

// TestOpenWithMaterial: a keyless envelope opens only with the key its
// material vouches for; each refusal is typed.
func TestOpenWithMaterial(t *testing.T) {
	ca := sigtest.NewCA(1)
	w := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := ca.NewKeylessSigner(2, w)
	env, material, err := envelope.SignWithMaterial(context.Background(), s, ktyp, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	mv := ca.Verifiers()
	payload, k, err := envelope.OpenWithMaterial(env, ktyp, "e", material, mv)
	if err != nil || string(payload) != "payload" || k.KeyID() != s.KeyID() || !k.WitnessedAt().Equal(w) || k.Signer() != s.Signer {
		t.Fatalf("open: %v %q", err, payload)
	}
	// Open, the key path, never trusts a keyless keyid.
	if _, _, err := envelope.Open(env, ktyp, "e", sigtest.Verifiers{}); errReason(t, err) != envelope.UnknownKey {
		t.Fatalf("Open of a keyless envelope: %v", err)
	}

	keyEnv, _ := envelope.Sign(sigtest.NewSigner(3), ktyp, []byte("payload"))
	if _, _, err := envelope.OpenWithMaterial(keyEnv, ktyp, "e", material, mv); errReason(t, err) != envelope.Malformed {
		t.Errorf("key envelope: %v", err)
	}
	_, _, err = envelope.OpenWithMaterial(env, ktyp, "e", material, sigtest.NewCA(9).Verifiers())
	var refused *sigtest.Refused
	if errReason(t, err) != envelope.MaterialRefused || !errors.As(err, &refused) || refused.Reason != "certificate-invalid" {
		t.Errorf("untrusted CA: %v", err)
	}
	other := ca.NewKeylessSigner(4, w)
	otherEnv, otherMat, _ := envelope.SignWithMaterial(context.Background(), other, ktyp, []byte("payload"))
	_, ok, _ := envelope.OpenWithMaterial(otherEnv, ktyp, "e", otherMat, mv)
	if _, _, err := envelope.OpenWithMaterial(env, ktyp, "e", material, otherKey{ok}); errReason(t, err) != envelope.UnknownKey {
		t.Errorf("another key: %v", err)
	}
	// The payload changed in the envelope and in the material alike: the
	// cert still vouches for the key, whose signature does not verify.
	var e envelope.Envelope
	json.Unmarshal(env, &e)
	e.Payload = base64.StdEncoding.EncodeToString([]byte("payloaD"))
	forged, _ := canon.Marshal(&e)
	var m sigtest.Material
	json.Unmarshal(material, &m)
	m.Envelope.Payload = e.Payload
	forgedMat, _ := canon.Marshal(&m)
	if _, _, err := envelope.OpenWithMaterial(forged, ktyp, "e", forgedMat, mv); errReason(t, err) != envelope.SignatureInvalid {
		t.Errorf("forged payload: %v", err)
	}
}

// badSigner returns what it is told to.
type badSigner struct {
	id            string
	sig, material []byte
}

func (b badSigner) KeyID() string { return b.id }
func (b badSigner) SignEnvelope(context.Context, string, []byte) ([]byte, []byte, error) {
	return b.sig, b.material, nil
}

// TestSignWithMaterialRefuses: no envelope for a key id, an empty or
// oversize signature, or no material.
func TestSignWithMaterialRefuses(t *testing.T) {
	id := envelope.KeylessPrefix + strings.Repeat("0", 64)
	for name, s := range map[string]badSigner{
		"key id":             {strings.Repeat("0", 64), []byte{1}, []byte("m")},
		"empty signature":    {id, nil, []byte("m")},
		"oversize signature": {id, make([]byte, envelope.MaxMaterialSignature+1), []byte("m")},
		"no material":        {id, []byte{1}, nil},
	} {
		if env, m, err := envelope.SignWithMaterial(context.Background(), s, typ, []byte("p")); err == nil || env != nil || m != nil {
			t.Errorf("%s: signed", name)
		}
	}
	if _, _, err := envelope.SignWithMaterial(context.Background(), badSigner{id, []byte{1}, []byte("m")}, typ, []byte("p")); err != nil {
		t.Errorf("good signer refused: %v", err)
	}
}
