package checkpoint

import (
	"errors"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/bundle/trust"
)

// TestVerifyThroughVerifiers: checkpoints are signed by any envelope.Signer
// and verified, looked up and key-checked through envelope.Verifiers.
func TestVerifyThroughVerifiers(t *testing.T) {
	events := writeLog(t, 3, 0, "")
	s := sigtest.NewSigner(5)
	at := time.Now().UTC() // after the events it covers
	c := Checkpoint{V: 1, Run: binding.Run, Length: 2, Head: events[1].Hash, Time: at.Format(time.RFC3339Nano)}
	cp, err := Sign(s, c)
	if err != nil || s.Calls() != 1 {
		t.Fatalf("sign: %v (%d calls)", err, s.Calls())
	}
	k := s.Key()
	v, err := Verify(cp, sigtest.Of(k))
	if err != nil || v.KeyID != s.KeyID() || v.Checkpoint != c {
		t.Fatalf("verify: %+v %v", v, err)
	}
	times, ids := k.CheckedAt()
	if k.Verified() != 1 || len(times) != 1 || !times[0].Equal(at) || ids[0] != "" {
		t.Fatalf("verified %d, CheckAt %v %q", k.Verified(), times, ids)
	}
	if err := VerifyLog(cp, sigtest.Of(s.Key()), events); err != nil {
		t.Fatal(err)
	}

	wrong := sigtest.NewSigner(6).Key()
	wrong.ID = s.KeyID()
	refusing := s.Key()
	refusing.Refuse = &trust.KeyError{Reason: trust.KeyRevoked, KeyID: s.KeyID(), Detail: "test"}
	mismatch := s.Key()
	mismatch.Refuse = &trust.KeyError{Reason: trust.IdentityMismatch, KeyID: s.KeyID(), Detail: "test"}
	for _, tc := range []struct {
		name   string
		vs     sigtest.Verifiers
		detail string // "" = accepted
	}{
		{"unknown key", sigtest.Verifiers{}, `sigtest: unknown key "` + s.KeyID() + `"`},
		{"another public key", sigtest.Verifiers{s.KeyID(): wrong}, "signature does not verify with key " + s.KeyID()},
		{"key refused", sigtest.Of(refusing), "key " + s.KeyID() + ": key-revoked: test"},
		{"identity is not a checkpoint's concern", sigtest.Of(mismatch), ""},
	} {
		_, err := Verify(cp, tc.vs)
		var ce *Error
		switch {
		case tc.detail == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.detail != "" && (!errors.As(err, &ce) || ce.Reason != Invalid || ce.Detail != tc.detail):
			t.Errorf("%s: %v, want detail %q", tc.name, err, tc.detail)
		}
	}
	if _, err := Verify(cp, sigtest.Verifiers{}); !errors.Is(err, sigtest.ErrUnknown) {
		t.Fatalf("lookup error not kept: %v", err)
	}
}
