package vsa_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/keytest"
)

// A gate key revoked an hour ago re-signs a VSA whose timeVerified is
// set before the revocation, about a bundle signed after it: the time is
// judged against what the summary's signer does not choose (the archive
// it names), and against the policy document's witness time.
func TestOpenRefusesBackdatedSummary(t *testing.T) {
	m := bundleFixture(t)
	gate := keytest.New(t)
	st, doc := summarizeDoc(t, m, m.archive, bundle.VerifyOptions{Commit: m.commit, ContractHash: m.contractHash, Witnessed: verifiedAt})
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
	a, err := vsa.Inspect(bytes.NewReader(m.archive), archive.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	// timeVerified moved back, read with the policy document: before the
	// policy's witnessed_at.
	_, _, err = vsa.Open(backdate(nil), store, doc)
	wantReason(t, err, vsa.SigningTimeImplausible)

	// Without the document the summary opens (the key was valid then),
	// but the archive it names was signed after timeVerified.
	got, _, err := vsa.Open(backdate(nil), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantReason(t, got.MatchEvidence(a), vsa.SigningTimeImplausible)

	// A timeVerified in the future of the verifier's clock.
	future := func(s *vsa.Statement) {
		s.Predicate.TimeVerified = time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	}
	_, _, err = vsa.Open(backdate(future), storeOf(t, gate), nil)
	wantReason(t, err, vsa.SigningTimeImplausible)

	// The untouched summary about the same archive still verifies with a
	// key not revoked.
	good, err := canon.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = vsa.Open(resign(t, gate, good), storeOf(t, gate), doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.MatchEvidence(a); err != nil {
		t.Fatal(err)
	}
	if !got.Passed() {
		t.Fatal("the fixture's summary did not pass")
	}
}
