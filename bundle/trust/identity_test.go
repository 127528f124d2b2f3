package trust

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

const wf = "acme/widget/.github/workflows/release.yml"

// TestIdentityParseRefusals: trust.json identities are decoded strictly
// and validated as keys are; each malformed store is refused, naming the
// field.
func TestIdentityParseRefusals(t *testing.T) {
	store := func(ids string) []byte { return []byte(`{"version":1,"keys":[],"identities":[` + ids + `]}`) }
	good := `{"id":"release","signer_workflow":"` + wf + `","status":"active"}`
	if s, err := Parse(store(good), "t"); err != nil || len(s.Identities) != 1 || s.FindIdentity("release") == nil {
		t.Fatalf("good store: %v", err)
	}
	many := strings.TrimSuffix(strings.Repeat(`{"id":"x","source_repo":"a/b","status":"active"},`, MaxIdentities+1), ",")
	for name, c := range map[string]struct{ body, want string }{
		"unknown field":        {`{"id":"a","signer_workflow":"` + wf + `","status":"active","subject":"x"}`, "subject"},
		"duplicate member":     {`{"id":"a","id":"b","signer_workflow":"` + wf + `","status":"active"}`, "id"},
		"duplicate id":         {good + "," + good, "duplicate identity id"},
		"empty id":             {`{"id":" ","signer_workflow":"` + wf + `","status":"active"}`, "id"},
		"id with a newline":    {`{"id":"a\nb","signer_workflow":"` + wf + `","status":"active"}`, "id"},
		"id too long":          {`{"id":"` + strings.Repeat("a", 300) + `","signer_workflow":"` + wf + `","status":"active"}`, "id"},
		"unpinned":             {`{"id":"a","issuer":"https://token.actions.githubusercontent.com","status":"active"}`, "neither signer_workflow nor source_repo"},
		"workflow not a path":  {`{"id":"a","signer_workflow":"acme/widget","status":"active"}`, "signer_workflow"},
		"repo not owner/name":  {`{"id":"a","source_repo":"acme","status":"active"}`, "source_repo"},
		"ref not a full ref":   {`{"id":"a","source_repo":"a/b","source_ref":"main","status":"active"}`, "source_ref"},
		"issuer not a URL":     {`{"id":"a","source_repo":"a/b","issuer":"token","status":"active"}`, "issuer"},
		"unknown status":       {`{"id":"a","source_repo":"a/b","status":"paused"}`, "status"},
		"active with revoked":  {`{"id":"a","source_repo":"a/b","status":"active","revoked_at":"2026-01-01T00:00:00Z"}`, "active identity"},
		"retired with revoked": {`{"id":"a","source_repo":"a/b","status":"retired","revoked_at":"2026-01-01T00:00:00Z"}`, "revoked_at"},
		"empty window":         {`{"id":"a","source_repo":"a/b","status":"active","not_before":"2026-02-01T00:00:00Z","not_after":"2026-01-01T00:00:00Z"}`, "not_after"},
		"too many":             {many, fmt.Sprintf("more than %d", MaxIdentities)},
	} {
		_, err := Parse(store(c.body), "t")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, c.want)
		}
	}
}

// TestIdentityLifecycle: an identity is judged at the witnessed time by
// the keys' rules; add, retire and revoke persist through Save and Load,
// and a store without identities is written as before.
func TestIdentityLifecycle(t *testing.T) {
	s := New()
	before, _ := s.Marshal()
	if bytes.Contains(before, []byte("identities")) {
		t.Fatal("an empty store writes identities")
	}
	nb := ts("2026-01-01T00:00:00Z")
	if err := s.AddIdentity(Identity{ID: "release", SignerWorkflow: wf + "@refs/heads/main", SourceRepo: "acme/widget", SourceRef: "refs/heads/main", NotBefore: &nb}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddIdentity(Identity{ID: "release", SourceRepo: "acme/widget"}); err == nil {
		t.Fatal("duplicate id added")
	}
	if err := s.AddIdentity(Identity{ID: "loose", Issuer: "https://token.actions.githubusercontent.com"}); err == nil {
		t.Fatal("unpinned identity added")
	}
	i := s.FindIdentity("release")
	if i.Status != Active {
		t.Fatalf("status %s", i.Status)
	}
	check := func(name, at string, want Reason) {
		t.Helper()
		err := s.FindIdentity("release").CheckWitnessed(ts(at))
		if reason(err) != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "identity release") {
			t.Errorf("%s: %v does not name the identity", name, err)
		}
	}
	check("inside the window", "2026-06-01T00:00:00Z", "")
	check("before not_before", "2025-12-31T00:00:00Z", KeyNotValidAtTime)
	if err := s.RetireIdentity("release", ts("2026-07-01T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	check("before retirement", "2026-06-30T00:00:00Z", "")
	check("after retirement", "2026-07-02T00:00:00Z", KeyNotValidAtTime)
	rev := ts("2026-03-01T00:00:00Z")
	if err := s.RevokeIdentity("release", &rev); err != nil {
		t.Fatal(err)
	}
	check("at revocation", "2026-03-01T00:00:00Z", KeyRevoked)
	check("before revocation", "2026-02-01T00:00:00Z", "")
	later := ts("2026-04-01T00:00:00Z")
	if err := s.RevokeIdentity("release", &later); err == nil {
		t.Fatal("revocation moved later")
	}
	if err := s.RetireIdentity("release", later); err == nil {
		t.Fatal("a revoked identity retired")
	}
	if err := s.RevokeIdentity("nobody", nil); reason(err) != UnknownKey {
		t.Fatalf("unknown identity: %v", err)
	}
	p := filepath.Join(t.TempDir(), "trust.json")
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	back, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.FindIdentity("release"); got == nil || got.Status != Revoked || !got.RevokedAt.Equal(rev) || got.SourceRef != "refs/heads/main" {
		t.Fatalf("reloaded %+v", got)
	}
	if err := s.RevokeIdentity("release", nil); err != nil {
		t.Fatal(err)
	}
	check("revoked always", "2026-02-01T00:00:00Z", KeyRevoked)
}
