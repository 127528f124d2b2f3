package vsa_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/key/keytest"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/kernel/canon"
)

// A gate key revoked an hour ago re-signs a VSA whose timeVerified is
// set before the revocation, about a bundle signed after it: the time is
// judged against the evidence the summary encloses, not what it asserts.
func TestOpenRefusesBackdatedSummary(t *testing.T) {
	m := bundleFixture(t)
	gate := keytest.New(t)
	_, st := signedBy(t, gate)
	revoked := time.Now().Add(-time.Hour)
	store := storeOf(t, gate)
	if err := store.Revoke(gate.Signer.KeyID(), &revoked); err != nil {
		t.Fatal(err)
	}
	backdate := func(f func(s *vsa.Statement)) []byte {
		c := *st
		c.Predicate.TimeVerified = revoked.Add(-time.Minute).UTC().Format(time.RFC3339Nano)
		if f != nil {
			f(&c)
		}
		b, err := canon.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		return resign(t, gate, b)
	}
	// timeVerified alone moved back: before the verdict's own signed_at.
	_, _, err := vsa.Open(backdate(nil), store)
	wantReason(t, err, vsa.SigningTimeImplausible)

	// The verdict's signed_at moved back too: the archive the summary
	// names (the subject a deploy gate holds) was signed after it.
	b := backdate(func(s *vsa.Statement) {
		s.Predicate.ProofGateVerdict.SignedAt = revoked.Add(-2 * time.Minute).UTC().Format(time.RFC3339Nano)
	})
	got, _, err := vsa.Open(b, store)
	if err == nil {
		a, ierr := vsa.Inspect(bytes.NewReader(m.archive), archive.DefaultLimits)
		if ierr != nil {
			t.Fatal(ierr)
		}
		err = got.MatchEvidence(a)
	}
	wantReason(t, err, vsa.SigningTimeImplausible)

	// A timeVerified in the future of the verifier's clock.
	future := func(s *vsa.Statement) {
		s.Predicate.TimeVerified = time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	}
	_, _, err = vsa.Open(backdate(future), storeOf(t, gate))
	wantReason(t, err, vsa.SigningTimeImplausible)

	// The untouched summary about the same archive still verifies with a
	// key not revoked.
	good, err := canon.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = vsa.Open(resign(t, gate, good), storeOf(t, gate))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := vsa.Inspect(bytes.NewReader(m.archive), archive.DefaultLimits)
	if err := got.MatchEvidence(a); err != nil {
		t.Fatal(err)
	}
	if got.Predicate.ProofGateVerdict.Verdict != bundle.VerdictAccepted {
		t.Fatal("the fixture's verdict is not accepted")
	}
}
