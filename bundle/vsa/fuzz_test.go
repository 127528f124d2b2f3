package vsa_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/keytest"
)

// FuzzOpen: any payload signed by the trusted gate key, with or without a
// policy document, either is refused with a *vsa.VerifyError or is a
// statement whose canonical JSON is the payload, with a result this
// package writes and the document (when given) the one it names.
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
	doc, _ := vsa.PolicyDocument(vsa.Input{})
	f.Add(good, doc)
	f.Add(good, []byte(nil))
	f.Add(bytes.Replace(good, []byte(`"PASSED"`), []byte(`"FAILED"`), 1), doc)
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","_type":"x"}`), []byte(`{"bundle":{}}`))
	f.Add([]byte(`[]`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, payload, doc []byte) {
		b, err := envelope.Sign(gate.Signer, vsa.PayloadType, payload)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := vsa.Open(b, store, doc)
		if err != nil {
			wantReason(t, err, reasonOf(err))
			return
		}
		c, err := canon.Marshal(got)
		if err != nil || !bytes.Equal(c, payload) {
			t.Fatalf("accepted a payload that is not its statement's canonical JSON: %q", payload)
		}
		if r := got.Predicate.VerificationResult; (r != vsa.Passed && r != vsa.Failed) || (got.Passed() && r != vsa.Passed) {
			t.Fatalf("result %s, Passed %v", r, got.Passed())
		}
		if doc != nil && sum(doc) != got.Predicate.Policy.Digest["sha256"] {
			t.Fatalf("accepted a policy document that is not the one policy.digest names")
		}
	})
}
