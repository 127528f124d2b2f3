package checkpoint

import (
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/trust"
)

// A key revoked an hour ago signs a checkpoint of a log written now, its
// time set before the revocation: the log's own event at the checkpoint's
// length was written after that time, so the checkpoint is refused.
func TestCheckpointBackdatedByRevokedKey(t *testing.T) {
	s, active := setup(t)
	_, st := setup(t)
	st.Keys = append(st.Keys[:0:0], active.Keys...)
	events := writeLog(t, 5, 0, "")
	revoked := time.Now().Add(-time.Hour)
	if err := st.Revoke(s.KeyID(), &revoked); err != nil {
		t.Fatal(err)
	}
	last, err := time.Parse(time.RFC3339Nano, events[2].Time)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		at    time.Time
		store *trust.Store
		want  Reason
	}{
		{"before the revocation", revoked.Add(-time.Minute), st, SigningTime},
		{"at the revocation", revoked, st, Invalid},
		{"an active key, just before the event it covers", last.Add(-time.Millisecond), active, SigningTime},
		{"an active key, at the event it covers", last, active, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Checkpoint{V: 1, Run: binding.Run, Length: 3, Head: events[2].Hash, Time: tc.at.UTC().Format(time.RFC3339Nano)}
			cp, err := Sign(s, c)
			if err != nil {
				t.Fatal(err)
			}
			if err := VerifyLog(cp, tc.store, events); reasonOf(err) != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}
