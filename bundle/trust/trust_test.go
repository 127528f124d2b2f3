package trust

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/keytest"
)

func newKey(t *testing.T) (*key.Signer, []byte) {
	t.Helper()
	k := keytest.New(t)
	return k.Signer, k.PubPEM
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func reason(err error) Reason {
	var ke *KeyError
	if errors.As(err, &ke) {
		return ke.Reason
	}
	return ""
}

func TestRotationRevocationWindows(t *testing.T) {
	s := New()
	old, oldPub := newKey(t)
	nw, newPub := newKey(t)
	nb, na := ts("2025-01-01T00:00:00Z"), ts("2027-01-01T00:00:00Z")
	if _, err := s.Add(oldPub, "repo:o/r", &nb, &na); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(oldPub, "", nil, nil); err == nil {
		t.Fatal("duplicate add accepted")
	}
	if _, err := s.Add(newPub, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	before := ts("2026-01-01T00:00:00Z")
	if _, err := s.Check(old.ID, before, "repo:o/r"); err != nil {
		t.Fatalf("active key refused: %v", err)
	}
	if _, err := s.Check(old.ID, before, "repo:o/other"); reason(err) != IdentityMismatch {
		t.Fatalf("identity: %v", err)
	}
	if _, err := s.Check(old.ID, ts("2024-06-01T00:00:00Z"), "repo:o/r"); reason(err) != KeyNotValidAtTime {
		t.Fatalf("before not_before: %v", err)
	}
	if _, err := s.Check(old.ID, ts("2027-06-01T00:00:00Z"), "repo:o/r"); reason(err) != KeyNotValidAtTime {
		t.Fatalf("after not_after: %v", err)
	}
	if _, err := s.Check(strings.Repeat("ab", 32), before, ""); reason(err) != UnknownKey {
		t.Fatalf("unknown: %v", err)
	}
	// Rotation: retire old at 2026-03-01; earlier signatures still verify.
	if err := s.Retire(old.ID, ts("2026-03-01T00:00:00Z")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(old.ID, before, "repo:o/r"); err != nil {
		t.Fatalf("retired key refused for an earlier signature: %v", err)
	}
	if _, err := s.Check(old.ID, ts("2026-04-01T00:00:00Z"), "repo:o/r"); reason(err) != KeyNotValidAtTime {
		t.Fatalf("retired key accepted after retirement: %v", err)
	}
	// Revocation with a time.
	at := ts("2026-02-01T00:00:00Z")
	if err := s.Revoke(old.ID, &at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(old.ID, before, "repo:o/r"); err != nil {
		t.Fatalf("signature before revocation refused: %v", err)
	}
	if _, err := s.Check(old.ID, ts("2026-02-15T00:00:00Z"), "repo:o/r"); reason(err) != KeyRevoked {
		t.Fatalf("signature after revocation: %v", err)
	}
	later := ts("2026-05-01T00:00:00Z")
	if err := s.Revoke(old.ID, &later); err == nil {
		t.Fatal("revocation moved later")
	}
	if err := s.Retire(old.ID, later); err == nil {
		t.Fatal("revoked key retired")
	}
	// Revocation without a time rejects everything.
	if err := s.Revoke(nw.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(nw.ID, ts("2000-01-01T00:00:00Z"), ""); reason(err) != KeyRevoked {
		t.Fatalf("fully revoked key: %v", err)
	}

	// Save/Load round trip is atomic and exact.
	p := filepath.Join(t.TempDir(), "trust.json")
	if err := s.Save(p); err != nil {
		t.Fatal(err)
	}
	s2, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := s.Marshal()
	b2, _ := s2.Marshal()
	if string(b1) != string(b2) {
		t.Fatalf("round trip differs:\n%s\n%s", b1, b2)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temp files left: %v", ents)
	}
}

func TestParseRefuses(t *testing.T) {
	s := New()
	_, pub := newKey(t)
	id, _ := s.Add(pub, "", nil, nil)
	good, _ := s.Marshal()
	_, other := newKey(t)
	otherStore := New()
	otherStore.Add(other, "", nil, nil)
	ob, _ := otherStore.Marshal()
	otherPEM := otherStore.Keys[0].PublicKey
	mut := func(old, new string) string { return strings.Replace(string(good), old, new, 1) }
	cases := map[string]string{
		"unknown field":        mut(`"version": 1`, `"version": 1, "extra": true`),
		"bad version":          mut(`"version": 1`, `"version": 2`),
		"bad status":           mut(`"active"`, `"trusted"`),
		"id of other key":      strings.Replace(string(ob), otherStore.Keys[0].ID, id, 1),
		"bad id":               mut(id, strings.ToUpper(id)),
		"trailing":             string(good) + "{}",
		"not json":             "{",
		"revoked_at on active": mut(`"status": "active"`, `"status": "active", "revoked_at": "2020-01-01T00:00:00Z"`),
		"window inverted":      mut(`"status": "active"`, `"status": "active", "not_before": "2021-01-01T00:00:00Z", "not_after": "2020-01-01T00:00:00Z"`),
		"pem swapped":          strings.Replace(string(good), jsonString(s.Keys[0].PublicKey), jsonString(otherPEM), 1),
	}
	dup := *s
	dup.Keys = append(append([]Key{}, s.Keys...), s.Keys...)
	db, _ := json.Marshal(&dup)
	cases["duplicate id"] = string(db)
	for name, in := range cases {
		if _, err := Parse([]byte(in), "trust.json"); err == nil {
			t.Errorf("%s: accepted:\n%s", name, in)
		} else if !strings.Contains(err.Error(), "trust.json") {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, err := Parse(good, "trust.json"); err != nil {
		t.Fatal(err)
	}
}

func jsonString(s string) string {
	return strings.ReplaceAll(s, "\n", `\n`)
}

func FuzzTrustStore(f *testing.F) {
	s := New()
	s.Add(keytest.New(f).PubPEM, "repo:o/r", nil, nil)
	good, _ := s.Marshal()
	f.Add(good)
	f.Add([]byte(`{"version":1,"keys":[]}`))
	f.Add([]byte(`{"version":1,"keys":[{"id":"","status":"revoked"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Parse(b, "fuzz")
		if err != nil {
			return
		}
		out, err := st.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		st2, err := Parse(out, "again")
		if err != nil {
			t.Fatalf("re-parse of marshalled store: %v", err)
		}
		for _, k := range st2.Keys {
			if _, err := st2.Check(k.ID, time.Unix(0, 0), ""); err != nil && reason(err) == "" {
				t.Fatalf("untyped key error: %v", err)
			}
		}
	})
}

// TestRetiredWithoutTimeRefusesEverySignature: a hand-edited store that
// says "retired" without retired_at must not leave the key valid forever
// (SPEC: accepted iff not retired, or T <= retired_at).
func TestRetiredWithoutTimeRefusesEverySignature(t *testing.T) {
	s := New()
	_, pub := newKey(t)
	id, _ := s.Add(pub, "", nil, nil)
	b, _ := s.Marshal()
	b = []byte(strings.Replace(string(b), `"status": "active"`, `"status": "retired"`, 1))
	st, err := Parse(b, "trust.json")
	if err != nil {
		// Refusing the store is fail-closed too.
		return
	}
	for _, at := range []string{"2000-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2100-01-01T00:00:00Z"} {
		if _, err := st.Check(id, ts(at), ""); reason(err) != KeyNotValidAtTime {
			t.Fatalf("retired key without retired_at, signature at %s: %v", at, err)
		}
	}
}

// TestParseRefusesCollidingMembers: encoding/json read
// {"status":"revoked","Status":"active"} as active and let a later
// duplicate win. Both are refused, naming the member's path.
func TestParseRefusesCollidingMembers(t *testing.T) {
	s := New()
	_, pub := newKey(t)
	id, _ := s.Add(pub, "", nil, nil)
	if err := s.Revoke(id, nil); err != nil {
		t.Fatal(err)
	}
	good, _ := s.Marshal()
	if !strings.Contains(string(good), `"status": "revoked"`) {
		t.Fatalf("no revoked status in\n%s", good)
	}
	mut := func(old, new string) []byte { return []byte(strings.Replace(string(good), old, new, 1)) }
	for name, tc := range map[string]struct {
		in   []byte
		path string
	}{
		"case variant after":  {mut(`"status": "revoked"`, `"status": "revoked", "Status": "active"`), "keys[0].Status"},
		"case variant before": {mut(`"status": "revoked"`, `"STATUS": "active", "status": "revoked"`), "keys[0].STATUS"},
		"duplicate status":    {mut(`"status": "revoked"`, `"status": "revoked", "status": "active"`), "keys[0].status"},
		"duplicate version":   {mut(`"version": 1`, `"version": 1, "version": 1`), "version"},
		"case variant keys":   {mut(`"version": 1`, `"version": 1, "Keys": []`), "Keys"},
	} {
		_, err := Parse(tc.in, "trust.json")
		if err == nil {
			t.Errorf("%s: accepted:\n%s", name, tc.in)
			continue
		}
		if !strings.Contains(err.Error(), "trust store trust.json: "+tc.path+": ") {
			t.Errorf("%s: error %q does not name %s", name, err, tc.path)
		}
	}
}
