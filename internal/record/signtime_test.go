package record

import (
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/internal/keytest"
)

// A key revoked an hour ago signs a state checkpoint of runs written now,
// its time set before the revocation: the listed runs' own event times
// say it cannot have been signed then.
func TestStateCheckpointBackdatedByRevokedKey(t *testing.T) {
	k := keytest.New(t)
	state := stateWith(t, 2)
	revoked := time.Now().Add(-time.Hour)
	rec, err := State(state, repoA, k.Signer, revoked.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	st := trustOf(t, k.PubPEM)
	if err := st.Revoke(k.Signer.KeyID(), &revoked); err != nil {
		t.Fatal(err)
	}
	_, err = VerifyState(state, rec.Envelope, st, repoA)
	if r, _ := stateReason(t, err); r != checkpoint.SigningTime {
		t.Fatalf("a state checkpoint backdated by a revoked key: %v, want %s", err, checkpoint.SigningTime)
	}
	// Not revoked, the same backdated time is still before the runs' events.
	_, err = VerifyState(state, rec.Envelope, trustOf(t, k.PubPEM), repoA)
	if r, _ := stateReason(t, err); r != checkpoint.SigningTime {
		t.Fatalf("a state checkpoint before its runs' events: %v, want %s", err, checkpoint.SigningTime)
	}
}
