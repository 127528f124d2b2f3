package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/record"
)

// TestSigningAndVerifyingGoThroughTheSeams exports with a Signer that is
// not bundle/key's and verifies through Verifiers that are not the trust
// store: the bundle and its checkpoint are signed, looked up, verified and
// key-checked only through the envelope interfaces.
func TestSigningAndVerifyingGoThroughTheSeams(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	s := sigtest.NewSigner(9)
	cpAt := time.Now().UTC() // after the events it covers
	if _, err := record.Checkpoint(f.state, f.id, s, cpAt); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	xr, err := Export(f.runDir, s, &buf, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Calls() != 2 || xr.KeyID != s.KeyID() {
		t.Fatalf("signer called %d times, key id %s", s.Calls(), xr.KeyID)
	}
	good := buf.Bytes()

	// The same bytes as bundle/key's signer of the same key would make.
	ks, err := key.NewSigner(s.Priv)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if _, err := Export(f.runDir, ks, &again, ExportOptions{}); err != nil || !bytes.Equal(good, again.Bytes()) {
		t.Fatalf("key.Signer and sigtest.Signer disagree: %v", err)
	}

	k := s.Key()
	witness := xr.SignedAt.Add(time.Minute)
	res, err := Verify(bytes.NewReader(good), sigtest.Of(k), VerifyOptions{AnySource: true, AnyContract: true, Witnessed: witness})
	if err != nil {
		t.Fatal(err)
	}
	if res.KeyID != s.KeyID() || res.Checkpoint == nil || res.Checkpoint.KeyID != s.KeyID() {
		t.Fatalf("result %+v", res)
	}
	times, ids := k.CheckedAt()
	if k.Verified() != 2 || len(times) != 2 || !times[0].Equal(xr.SignedAt) || ids[0] != "repo:acme/widget" ||
		!times[1].Equal(cpAt) || ids[1] != "" {
		t.Fatalf("verify %d times, CheckAt %v %q", k.Verified(), times, ids)
	}
	// The bundle's key and the checkpoint's are both judged at the witness time.
	if w := k.Witnessed(); len(w) != 2 || !w[0].Equal(witness) || !w[1].Equal(witness) {
		t.Fatalf("CheckWitnessed %v", w)
	}

	// The trust store is one Verifiers among others: the same bundle
	// verifies against a store holding the public key.
	pub, _ := key.PublicPEM(s.Public())
	st := trust.New()
	if _, err := st.Add(pub, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(bytes.NewReader(good), st, anyRun); err != nil {
		t.Fatal(err)
	}

	// The verifier's word decides the signature: a broken signature is
	// refused by an honest key and accepted by a forging one.
	fs := files(t, good)
	badSig := repack(t, edit(fs, AttestationFile, func(b []byte) []byte {
		var env envelope.Envelope
		json.Unmarshal(b, &env)
		sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
		sig[0] ^= 1
		env.Signatures[0].Sig = base64.StdEncoding.EncodeToString(sig)
		out, _ := json.Marshal(&env)
		return out
	}))
	forging := s.Key()
	forging.Forge = true
	wrong := sigtest.NewSigner(10).Key()
	wrong.ID = s.KeyID()
	liar := sigtest.Verifiers{s.KeyID(): sigtest.NewSigner(11).Key()}
	refusing := s.Key()
	refusing.Refuse = &trust.KeyError{Reason: trust.KeyRevoked, KeyID: s.KeyID(), Detail: "revoked by the test"}
	for _, tc := range []struct {
		name string
		in   []byte
		vs   envelope.Verifiers
		want Reason
	}{
		{"broken signature, honest key", badSig, sigtest.Of(s.Key()), SignatureInvalid},
		{"broken signature, forging key", badSig, sigtest.Verifiers{s.KeyID(): forging}, ""},
		{"another public key under the id", good, sigtest.Verifiers{s.KeyID(): wrong}, SignatureInvalid},
		{"lookup returns another key", good, liar, UnknownKey},
		{"unknown keyid", good, sigtest.Verifiers{}, UnknownKey},
		{"key refused at the signing time", good, sigtest.Of(refusing), KeyRevoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(tc.in), tc.vs, anyRun)
			if reasonOf(err) != tc.want {
				t.Fatalf("reason %q, want %q (%v)", reasonOf(err), tc.want, err)
			}
		})
	}
	var ve *VerifyError
	_, err = Verify(bytes.NewReader(good), sigtest.Verifiers{}, anyRun)
	if !errors.As(err, &ve) || !errors.Is(err, sigtest.ErrUnknown) ||
		ve.Detail != `keyid "`+s.KeyID()+`" is not in the trust store` {
		t.Fatalf("unknown key: %v", err)
	}
}
