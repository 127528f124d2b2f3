package bundle

import (
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
)

// agentOpenerChecked opens envelopes signed by a key of store and judges
// the key at the time the evidence asserts (what a trust store opener
// does).
func agentOpenerChecked(store *trust.Store) AgentSessionOpener {
	return func(att, _ []byte) ([]byte, func(time.Time, string, string) error, error) {
		p, k, err := envelope.Open(att, PayloadType, AttestationFile, store)
		if err != nil {
			return nil, nil, err
		}
		return p, func(at time.Time, _, _ string) error { return k.CheckAt(at, "") }, nil
	}
}

// A key revoked an hour ago re-signs agent-session evidence whose
// signed_at is set before the revocation: the runs it carries were
// logged after that time, so the evidence is refused.
func TestAgentSessionBackdatedByRevokedKey(t *testing.T) {
	fx := makeImplemented(t)
	k := newKey(t)
	good, err := ExportAgentSession(fx.runDir, k.s.KeyID(), agentSigner(k))
	if err != nil {
		t.Fatal(err)
	}
	revoked := time.Now().Add(-time.Hour)
	st := storeWith(t, k)
	if err := st.Revoke(k.s.KeyID(), &revoked); err != nil {
		t.Fatal(err)
	}
	want := AgentSessionWant{Commit: fx.commit, Repo: "acme/widget"}
	// As signed (after the revocation): the key is refused.
	_, err = OpenAgentSession(good, want, agentOpenerChecked(st))
	agentRefused(t, err, AgentSignature)

	f := agentFiles(t, good)
	var s AgentSessionStatement
	if err := canonDecode(f[AttestationFile], &s); err != nil {
		t.Fatal(err)
	}
	s.Predicate.SignedAt = revoked.Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	p, err := canon.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if f[AttestationFile], _, err = agentSigner(k)(p); err != nil {
		t.Fatal(err)
	}
	_, err = OpenAgentSession(agentRepack(t, f, nil), want, agentOpenerChecked(st))
	agentRefused(t, err, AgentSigningTime)
	// With the key active the untouched evidence is accepted.
	if _, err := OpenAgentSession(good, want, agentOpenerChecked(storeWith(t, k))); err != nil {
		t.Fatal(err)
	}
}
