package envelope_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
)

// Both Signer implementations satisfy the seam, and so does the trust store.
var (
	_ envelope.Signer     = (*key.Signer)(nil)
	_ envelope.Signer     = (*sigtest.Signer)(nil)
	_ envelope.Verifiers  = (*trust.Store)(nil)
	_ envelope.TrustedKey = (*trust.Key)(nil)
	_ envelope.Verifiers  = sigtest.Verifiers{}
)

const typ = "application/x-test"

func errReason(t *testing.T, err error) envelope.Reason {
	t.Helper()
	var oe *envelope.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) is not an *envelope.Error", err, err)
	}
	return oe.Reason
}

// TestSignersAgree: the sigstore-backed key.Signer and the crypto/ed25519
// sigtest.Signer make the same envelope bytes from the same key, and each
// opens with the other's verifier.
func TestSignersAgree(t *testing.T) {
	fake := sigtest.NewSigner(7)
	real, err := key.NewSigner(fake.Priv)
	if err != nil {
		t.Fatal(err)
	}
	if real.KeyID() != fake.KeyID() {
		t.Fatalf("key ids %s, %s", real.KeyID(), fake.KeyID())
	}
	a, err := envelope.Sign(real, typ, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := envelope.SignContext(context.Background(), fake, typ, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) || fake.Calls() != 1 {
		t.Fatalf("envelopes differ (%d calls):\n%s\n%s", fake.Calls(), a, b)
	}
	pub, _ := key.PublicPEM(fake.Public())
	st := trust.New()
	if _, err := st.Add(pub, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	for name, vs := range map[string]envelope.Verifiers{"trust store": st, "sigtest": sigtest.Of(fake.Key())} {
		p, k, err := envelope.Open(a, typ, "env", vs)
		if err != nil || string(p) != "payload" || k.KeyID() != fake.KeyID() {
			t.Fatalf("%s: %q %v", name, p, err)
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	s := sigtest.NewSigner(1)
	other := sigtest.NewSigner(2)
	good, err := envelope.Sign(s, typ, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	tamper := func(fn func(*envelope.Envelope)) []byte {
		var env envelope.Envelope
		json.Unmarshal(good, &env)
		fn(&env)
		b, _ := json.Marshal(&env)
		return b
	}
	flippedPayload := tamper(func(e *envelope.Envelope) {
		e.Payload = base64.StdEncoding.EncodeToString([]byte(`{"a":2}`))
	})
	wrongKey := other.Key()
	wrongKey.ID = s.KeyID() // the right id, another public key
	liar := sigtest.Verifiers{s.KeyID(): other.Key()}
	forged := s.Key()
	forged.Forge = true

	for _, tc := range []struct {
		name string
		in   []byte
		vs   envelope.Verifiers
		want envelope.Reason // "" = opens
	}{
		{"good", good, sigtest.Of(s.Key()), ""},
		{"not json", []byte("["), sigtest.Of(s.Key()), envelope.Malformed},
		{"other payload type", tamper(func(e *envelope.Envelope) { e.PayloadType = "u" }), sigtest.Of(s.Key()), envelope.Malformed},
		{"unknown keyid", good, sigtest.Of(other.Key()), envelope.UnknownKey},
		{"verifiers return another key", good, liar, envelope.UnknownKey},
		{"wrong key under the right id", good, sigtest.Of(wrongKey), envelope.SignatureInvalid},
		{"flipped payload", flippedPayload, sigtest.Of(s.Key()), envelope.SignatureInvalid},
		{"flipped payload, forging verifier", flippedPayload, sigtest.Verifiers{s.KeyID(): forged}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, k, err := envelope.Open(tc.in, typ, "env", tc.vs)
			if tc.want == "" {
				if err != nil || k == nil || len(p) == 0 {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if got := errReason(t, err); got != tc.want || p != nil || k != nil {
				t.Fatalf("reason %s, want %s (%v)", got, tc.want, err)
			}
		})
	}
	if forged.Verified() != 1 {
		t.Fatalf("forging verifier called %d times", forged.Verified())
	}
}

// TestOpenKeepsTheLookupError: the trust store's refusal stays reachable.
func TestOpenKeepsTheLookupError(t *testing.T) {
	s := sigtest.NewSigner(3)
	b, _ := envelope.Sign(s, typ, []byte("p"))
	_, _, err := envelope.Open(b, typ, "attestation.dsse.json", trust.New())
	var ke *trust.KeyError
	if !errors.As(err, &ke) || ke.Reason != trust.UnknownKey || ke.KeyID != s.KeyID() {
		t.Fatalf("error %v", err)
	}
	want := `attestation.dsse.json: keyid "` + s.KeyID() + `": key ` + s.KeyID() + ": unknown-key: not in the trust store"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	_, _, err = envelope.Open(b, typ, "attestation.dsse.json", sigtest.Verifiers{})
	if !errors.Is(err, sigtest.ErrUnknown) {
		t.Fatalf("error %v", err)
	}
}

type failingSigner struct{ err error }

func (f failingSigner) KeyID() string { return "f" }
func (f failingSigner) Sign(context.Context, []byte) ([]byte, error) {
	return nil, f.err
}

func TestSignErrors(t *testing.T) {
	boom := errors.New("boom")
	if _, err := envelope.Sign(failingSigner{boom}, typ, []byte("p")); !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, priv, _ := ed25519.GenerateKey(nil)
	ks, _ := key.NewSigner(priv)
	for _, s := range []envelope.Signer{ks, sigtest.NewSigner(4)} {
		if _, err := envelope.SignContext(ctx, s, typ, []byte("p")); !errors.Is(err, context.Canceled) {
			t.Fatalf("%T: error %v", s, err)
		}
	}
	if _, err := envelope.Sign(failingSigner{boom}, typ, nil); err == nil || !strings.HasPrefix(err.Error(), "sign: ") {
		t.Fatalf("error %v", err)
	}
}
