package starter

import (
	"strings"
	"testing"
)

// TestCheckRepo: --repo takes a GitHub OWNER/NAME and nothing that could
// read as a path, a second component, or terminal control.
func TestCheckRepo(t *testing.T) {
	for _, ok := range []string{"acme/widget", "Acme-1/wid.get_2", "a/b", "x/" + strings.Repeat("n", 100)} {
		if err := CheckRepo("--repo", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "acme", "/widget", "acme/", "acme/widget/x", "../widget", "acme/..", "./x", "acme/.",
		"acme/wid get", "acme/wid\nget", "acme/wid\x1b[2Jget", "acme\\widget", "acme/wïdget", "x/" + strings.Repeat("n", 101)} {
		err := CheckRepo("--repo", bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if strings.ContainsAny(err.Error(), "\n\x1b") || len(err.Error()) > 300 {
			t.Errorf("%q: error not one bounded printable line: %q", bad, err)
		}
	}
}

// TestTrustAddCommand: with the origin's repository the printed trust add
// binds the key to it (local runs record the origin, so their bundles
// satisfy it); without one it binds nothing and says how to.
func TestTrustAddCommand(t *testing.T) {
	cmd, note := TrustAddCommand(".proofgate/trust.json", "/k/my key.pub.pem", "acme/widget")
	if cmd != "proofgate trust add --store .proofgate/trust.json --public-key '/k/my key.pub.pem' --identity repo:acme/widget" || note != "" {
		t.Fatalf("%q %q", cmd, note)
	}
	for _, none := range []string{"", PlaceholderRepo, "../x"} {
		cmd, note = TrustAddCommand(".proofgate/trust.json", "k.pub.pem", none)
		if cmd != "proofgate trust add --store .proofgate/trust.json --public-key k.pub.pem" || !strings.Contains(note, "--repo OWNER/NAME") {
			t.Fatalf("%q: %q %q", none, cmd, note)
		}
	}
}

// FuzzCheckRepo: what CheckRepo accepts is exactly OWNER/NAME of the
// allowed bytes, neither part a dot directory.
func FuzzCheckRepo(f *testing.F) {
	for _, s := range []string{"acme/widget", "../x", "a/b/c", "a/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckRepo("--repo", s) != nil {
			return
		}
		owner, name, _ := strings.Cut(s, "/")
		if strings.Contains(name, "/") || owner == "" || name == "" || owner == ".." || name == ".." || owner == "." || name == "." {
			t.Fatalf("accepted %q", s)
		}
		for _, r := range s {
			if !(r == '/' || r == '-' || r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				t.Fatalf("accepted %q (%q)", s, r)
			}
		}
	})
}
