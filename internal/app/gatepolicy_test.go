package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseGatePolicy(t *testing.T) {
	p, err := ParseGatePolicy([]byte(`{"bundle":{"require_approvals":2,"require_rules":["release"]},"identities":{"signer-workflow":"a/b/.github/workflows/r.yml"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Has("require_approvals") || !p.Has("require_rules") || p.Has("commit") || p.Bundle.RequireApprovals != 2 {
		t.Fatalf("%+v", p)
	}
	for _, bad := range []string{
		`{"bundle":{"require_approvals":2,"require_approvals":0}}`, // duplicate
		`{"bundle":{"require_approvals":2,"Require_approvals":0}}`, // case variant
		`{"bundle":{"approvals":0}}`,                               // unknown
		`{"bundle":{"require_approvals":"2"}}`,                     // wrong type
		`{"bundle":{}} {}`,                                         // trailing
		`[]`,
	} {
		if _, err := ParseGatePolicy([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestCheckTrust(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "trust.json")
	if err := os.WriteFile(f, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const digest = "ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356" // sha256 of "{}\n"
	pin := func(name, d string) *GatePolicy {
		p, err := ParseGatePolicy([]byte(`{"bundle":{"require_approvals":1},"trust":[{"name":"` + name + `","digest":{"sha256":"` + d + `"}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := pin("trust.json", digest).CheckTrust("", f); err != nil {
		t.Fatalf("the pinned file: %v", err)
	}
	var pe *TrustPinError
	if err := pin("trust.json", strings.Repeat("0", 64)).CheckTrust(f); !errors.As(err, &pe) || pe.Path != f || pe.Got != digest {
		t.Fatalf("another digest: %v", err)
	}
	if err := pin("root.json", digest).CheckTrust(f); !errors.As(err, &pe) || pe.Path != "" {
		t.Fatalf("a file not given: %v", err)
	}
	if err := pin("gone.json", digest).CheckTrust(filepath.Join(dir, "gone.json")); err == nil || errors.As(err, &pe) {
		t.Fatalf("an unreadable file: %v", err)
	}
}

// FuzzParseGatePolicy: any bytes decode or are refused, never panic; a
// member Has says is absent was not decoded either.
func FuzzParseGatePolicy(f *testing.F) {
	f.Add([]byte(`{"bundle":{"require_approvals":1,"profile":""},"trust":[{"name":"t","digest":{"sha256":"00"}}]}`))
	f.Add([]byte(`{"bundle":{"unsafe":["any-source"]},"identities":{"source-ref":"refs/heads/main"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseGatePolicy(b)
		if err != nil {
			return
		}
		if !p.Has("require_approvals") && p.Bundle.RequireApprovals != 0 || !p.Has("require_rules") && p.Bundle.RequireRules != nil {
			t.Fatalf("a member Has calls absent was decoded: %q", b)
		}
	})
}
