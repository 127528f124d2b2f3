package sigstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
)

// TestRevokedIdentityWinsOverFlags (issue 25 class 3): a trust store
// identity revoked at the witnessed time refuses a certificate it matches
// even when a flag or action-input identity (no lifecycle) matches the same
// certificate, whether the flag names the same identity, a narrower or a
// broader one; a store identity that does not match the certificate does
// not refuse it, and a revocation after the witnessed time refuses
// nothing.
func TestRevokedIdentityWinsOverFlags(t *testing.T) {
	w := newWorld(t)
	s := w.sign(t, nil, defaultClaims(), false, false)
	const anyRef = "proofgate/proofgate/.github/workflows/proofgate.yml"
	flag := func(wf string) sigstore.Identity { return sigstore.Identity{Name: "flags", SignerWorkflow: wf} }
	for _, tc := range []struct {
		name     string
		store    trust.Identity
		flag     sigstore.Identity
		revoke   time.Duration // revoked_at relative to the witnessed time
		wantDeny bool
	}{
		{"same identity", trust.Identity{SignerWorkflow: reusable}, flag(reusable), -time.Minute, true},
		{"store narrower than the flag", trust.Identity{SignerWorkflow: reusable, SourceRepo: "octo/app"}, flag(anyRef), -time.Minute, true},
		{"store broader than the flag", trust.Identity{SourceRepo: "octo/app"}, pinned(), -time.Minute, true},
		{"revoked for every signature", trust.Identity{SignerWorkflow: reusable}, flag(reusable), 0, true},
		{"revoked after the witnessed time", trust.Identity{SignerWorkflow: reusable}, flag(reusable), time.Hour, false},
		{"revoked identity of another repository", trust.Identity{SourceRepo: "octo/other"}, flag(reusable), -time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := trust.New()
			tc.store.ID = "revoked"
			if err := st.AddIdentity(tc.store); err != nil {
				t.Fatal(err)
			}
			var at *time.Time
			if tc.revoke != 0 {
				r := time.Now().Add(tc.revoke)
				at = &r
			}
			if err := st.RevokeIdentity("revoked", at); err != nil {
				t.Fatal(err)
			}
			// The flags first, as bundle verify and the verify action list them.
			ids := append([]sigstore.Identity{tc.flag}, sigstore.TrustIdentities(st)...)
			k, err := verifiers(t, w, ids...).VerifierFor(s.keyID, s.env, s.material(t))
			if err != nil {
				t.Fatal(err)
			}
			err = k.CheckAt(k.WitnessedAt(), "repo:octo/app")
			var ke *trust.KeyError
			switch {
			case tc.wantDeny && (!errors.As(err, &ke) || ke.Reason != trust.KeyRevoked):
				t.Fatalf("CheckAt: %v, want key-revoked: the store's revocation must win over the flags", err)
			case !tc.wantDeny && err != nil:
				t.Fatalf("CheckAt: %v, want accepted", err)
			}
		})
	}
}

// TestStoreLifecycleDecidesItsCertificates: a certificate a store identity
// matches is judged by the store (a retired identity refuses it although
// a flag identity matches it too; a second, valid store identity accepts
// it); a flag decides alone only for a certificate no store identity
// matches.
func TestStoreLifecycleDecidesItsCertificates(t *testing.T) {
	w := newWorld(t)
	s := w.sign(t, nil, defaultClaims(), false, false)
	retired := time.Now().Add(-time.Minute)
	check := func(name string, want error, store ...trust.Identity) {
		t.Helper()
		st := trust.New()
		for _, i := range store {
			if err := st.AddIdentity(i); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.RetireIdentity("old", retired); err != nil {
			t.Fatal(err)
		}
		ids := append([]sigstore.Identity{pinned()}, sigstore.TrustIdentities(st)...)
		k, err := verifiers(t, w, ids...).VerifierFor(s.keyID, s.env, s.material(t))
		if err != nil {
			t.Fatal(err)
		}
		got := k.CheckWitnessed(k.WitnessedAt())
		var ke *trust.KeyError
		if (want == nil) != (got == nil) || (want != nil && (!errors.As(got, &ke) || ke.Reason != trust.KeyNotValidAtTime)) {
			t.Fatalf("%s: %v, want %v", name, got, want)
		}
	}
	old := trust.Identity{ID: "old", SignerWorkflow: reusable}
	check("retired store identity, flag matches too", errors.New("key-not-valid-at-signing-time"), old)
	check("retired and a valid store identity", nil, old, trust.Identity{ID: "new", SourceRepo: "octo/app"})
	check("retired identity of another workflow", nil, trust.Identity{ID: "old", SignerWorkflow: "octo/app/.github/workflows/x.yml"})
}
