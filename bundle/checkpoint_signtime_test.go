package bundle

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/record"
)

// A bundle carries a checkpoint re-signed by a checkpoint key revoked an
// hour ago, its time set before the revocation: the log's own time of the
// event it covers (and the bundle's witness time) say otherwise.
func TestBundleCheckpointBackdatedByRevokedKey(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k, ck := newKey(t), newKey(t)
	if _, err := record.Checkpoint(f.state, f.id, ck.s, time.Now()); err != nil {
		t.Fatal(err)
	}
	b := export(t, f, k, ExportOptions{})
	revoked := time.Now().Add(-time.Hour)
	st := storeWith(t, k, ck)
	if err := st.Revoke(ck.s.KeyID(), &revoked); err != nil {
		t.Fatal(err)
	}
	fs := edit(files(t, b), CheckpointFile, func(old []byte) []byte {
		_, p, _ := envelope.Parse(old, checkpoint.PayloadType, "cp")
		var c checkpoint.Checkpoint
		if err := json.Unmarshal(p, &c); err != nil {
			t.Fatal(err)
		}
		c.Time = revoked.Add(-time.Minute).UTC().Format(time.RFC3339Nano)
		out, err := checkpoint.Sign(ck.s, c)
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
	forged := repack(t, resign(t, fs, k, func(s *Statement) { s.Subject = subjectsFor(fs) }))
	if _, err := Verify(bytes.NewReader(forged), st, anyRun); reasonOf(err) != SigningTimeImplausible {
		t.Fatalf("a checkpoint backdated by a revoked key: %v, want %s", err, SigningTimeImplausible)
	}
	// The checkpoint as signed (now, after the revocation) is refused for
	// the key; with the key active it verifies.
	if _, err := Verify(bytes.NewReader(b), st, anyRun); reasonOf(err) != CheckpointInvalid {
		t.Fatalf("the checkpoint of a revoked key: %v, want %s", err, CheckpointInvalid)
	}
	if _, err := Verify(bytes.NewReader(b), storeWith(t, k, ck), anyRun); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint signed before its key was revoked, in a bundle witnessed
// after the revocation, is refused as the bundle's own key would be.
func TestBundleCheckpointKeyJudgedAtWitnessTime(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k, ck := newKey(t), newKey(t)
	if _, err := record.Checkpoint(f.state, f.id, ck.s, time.Now()); err != nil {
		t.Fatal(err)
	}
	b := export(t, f, k, ExportOptions{})
	revoked := time.Now()
	witnessed := revoked.Add(time.Second)
	st := storeWith(t, k, ck)
	if err := st.Revoke(ck.s.KeyID(), &revoked); err != nil {
		t.Fatal(err)
	}
	opts := anyRun
	opts.Witnessed = witnessed
	if _, err := Verify(bytes.NewReader(b), st, opts); reasonOf(err) != CheckpointInvalid {
		t.Fatalf("a checkpoint key revoked before the witness time: %v, want %s", err, CheckpointInvalid)
	}
	if _, err := Verify(bytes.NewReader(b), storeWith(t, k, ck), opts); err != nil {
		t.Fatal(err)
	}
}
