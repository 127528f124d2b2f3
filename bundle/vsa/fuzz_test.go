package vsa_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key/keytest"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/kernel/canon"
)

// FuzzOpen: any payload signed by the trusted gate key either is refused
// with a *vsa.VerifyError or is a statement whose canonical JSON is the
// payload, with levels agreeing with its verdict.
func FuzzOpen(f *testing.F) {
	gate := keytest.New(f)
	store := storeOf(nil, gate)
	clean := false
	st, err := vsa.New(vsa.Input{Name: "b.tgz", Archive: &vsa.Archive{SHA256: strings.Repeat("a", 64)},
		Verdict: bundle.Verdict{Verdict: bundle.VerdictAccepted, RunID: "r", Dirty: &clean, Commit: strings.Repeat("b", 40), Tree: strings.Repeat("c", 40)}})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := canon.Marshal(st)
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"PASSED"`), []byte(`"FAILED"`), 1))
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","_type":"x"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		b, err := envelope.Sign(gate.Signer, vsa.PayloadType, payload)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := vsa.Open(b, store)
		if err != nil {
			wantReason(t, err, reasonOf(err))
			return
		}
		c, err := canon.Marshal(got)
		if err != nil || !bytes.Equal(c, payload) {
			t.Fatalf("accepted a payload that is not its statement's canonical JSON: %q", payload)
		}
		if got.Passed() != (got.Predicate.VerificationResult == vsa.Passed) {
			t.Fatalf("result %s for verdict %s", got.Predicate.VerificationResult, got.Predicate.ProofGateVerdict.Verdict)
		}
	})
}
