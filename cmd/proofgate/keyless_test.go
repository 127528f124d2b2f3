package main

import (
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/trust"
)

// TestKeylessIdentities: the flags give one identity named "flags"; each
// trust store identity becomes one whose Valid is its lifecycle at the
// witnessed time; no flags and no store give none (a usage error).
func TestKeylessIdentities(t *testing.T) {
	st := trust.New()
	rev := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []trust.Identity{
		{ID: "release", SignerWorkflow: "acme/widget/.github/workflows/release.yml@refs/heads/main", SourceRepo: "acme/widget", SourceRef: "refs/heads/main"},
		{ID: "nightly", SourceRepo: "acme/widget", Issuer: "https://issuer.example"},
	} {
		if err := st.AddIdentity(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RevokeIdentity("nightly", &rev); err != nil {
		t.Fatal(err)
	}
	f := keylessVerifyFlags{trustedRoot: "tr.json", signerWorkflow: "acme/widget/.github/workflows/r.yml", sourceRef: "refs/tags/v1"}
	ids := f.identities(st)
	if len(ids) != 3 || ids[0].Name != "flags" || ids[0].SignerWorkflow != f.signerWorkflow || ids[0].SourceRef != "refs/tags/v1" || ids[0].Valid != nil {
		t.Fatalf("flags identity %+v", ids)
	}
	if ids[1].SignerWorkflow != st.Identities[0].SignerWorkflow || ids[1].SourceRepo != "acme/widget" || ids[1].SourceRef != "refs/heads/main" ||
		ids[2].Issuer != "https://issuer.example" || ids[1].Valid == nil || ids[2].Valid == nil {
		t.Fatalf("store identities %+v", ids[1:])
	}
	if err := ids[1].Valid(rev.Add(time.Hour)); err != nil {
		t.Fatalf("active identity refused: %v", err)
	}
	if err := ids[2].Valid(rev.Add(-time.Hour)); err != nil {
		t.Fatalf("nightly before revocation: %v", err)
	}
	if err := ids[2].Valid(rev); err == nil {
		t.Fatal("nightly accepted at its revocation time")
	}
	if got := (&keylessVerifyFlags{trustedRoot: "tr.json"}).identities(trust.New()); len(got) != 0 {
		t.Fatalf("no flags, empty store: %+v", got)
	}
	if _, err := (&keylessVerifyFlags{trustedRoot: "tr.json"}).verifiers(trust.New()); err == nil {
		t.Fatal("an unpinned trusted root was accepted")
	}
	if mv, err := (&keylessVerifyFlags{}).verifiers(st); mv != nil || err != nil {
		t.Fatalf("no --trusted-root: %v %v", mv, err)
	}
}
