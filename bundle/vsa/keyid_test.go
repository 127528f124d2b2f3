package vsa_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// firstOnly checks that b carries its signature twice, under the gate's
// key id and then under the key's fingerprint (ADR 0038), and returns the
// envelope with the first entry only (what bundle/envelope parses).
func firstOnly(t *testing.T, b []byte) []byte {
	t.Helper()
	env := decodeEnvelope(t, b)
	if len(env.Signatures) != 2 || env.Signatures[1].Sig != env.Signatures[0].Sig {
		t.Fatalf("signatures %+v, want the one signature twice", env.Signatures)
	}
	env.Signatures = env.Signatures[:1]
	return encodeEnvelope(t, env)
}

func decodeEnvelope(t *testing.T, b []byte) envelope.Envelope {
	t.Helper()
	var env envelope.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

func encodeEnvelope(t *testing.T, env envelope.Envelope) []byte {
	t.Helper()
	b, err := canon.Marshal(&env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKeyIDForSLSATooling: the second signature entry's keyid is exactly
// what securesystemslib's DSSE verifier (the one slsa-verifier
// verify-vsa uses) derives for the gate's key, so that verifier accepts
// the VSA given only the public key; Open accepts the VSA, and one with
// the first entry only (as written before ADR 0038), and refuses a
// second entry that is not the same signature under that fingerprint.
func TestKeyIDForSLSATooling(t *testing.T) {
	m := bundleFixture(t)
	st := summarize(t, m, m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, RequireApprovals: 1})
	gate, other := keytest.New(t), keytest.New(t)
	b, err := vsa.Sign(context.Background(), gate.Signer, st)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dsse.SHA256KeyID(gate.Signer.Public)
	if err != nil {
		t.Fatal(err)
	}
	env := decodeEnvelope(t, b)
	if got := env.Signatures[1].KeyID; got != want {
		t.Fatalf("second keyid %q, securesystemslib derives %q", got, want)
	}
	if _, _, err := vsa.Open(b, storeOf(t, gate), nil); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, _, err := vsa.Open(firstOnly(t, b), storeOf(t, gate), nil); err != nil {
		t.Fatalf("Open of the single-signature form: %v", err)
	}

	otherFP, _ := vsa.Fingerprint(other.Signer.Public)
	byOther, err := vsa.Sign(context.Background(), other.Signer, st)
	if err != nil {
		t.Fatal(err)
	}
	otherSig := decodeEnvelope(t, byOther).Signatures[0].Sig
	for name, mutate := range map[string]func(e *envelope.Envelope){
		"another key's fingerprint": func(e *envelope.Envelope) { e.Signatures[1].KeyID = otherFP },
		"another signature":         func(e *envelope.Envelope) { e.Signatures[1].Sig = otherSig },
		"the key id twice":          func(e *envelope.Envelope) { e.Signatures[1].KeyID = e.Signatures[0].KeyID },
		"a fingerprint too short":   func(e *envelope.Envelope) { e.Signatures[1].KeyID = want[:len(want)-1] },
		"fingerprint first":         func(e *envelope.Envelope) { e.Signatures[0], e.Signatures[1] = e.Signatures[1], e.Signatures[0] },
		"three entries":             func(e *envelope.Envelope) { e.Signatures = append(e.Signatures, e.Signatures[1]) },
		"the fingerprint only":      func(e *envelope.Envelope) { e.Signatures = e.Signatures[1:] },
	} {
		e := decodeEnvelope(t, b)
		mutate(&e)
		_, k, err := vsa.Open(encodeEnvelope(t, e), storeOf(t, gate), nil)
		wantReason(t, err, vsa.Malformed)
		if k != nil {
			t.Fatalf("%s: a refused Open returned a key", name)
		}
	}
}
