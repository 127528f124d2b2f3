package event

import "testing"

func TestCleanRel(t *testing.T) {
	for _, ok := range []string{".proofgate/contract.yaml", "a/b.json", "x"} {
		if !CleanRel(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "-x", `a\b`, "a/"} {
		if CleanRel(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSplitRepo(t *testing.T) {
	if o, n, ok := SplitRepo("acme/widget"); !ok || o != "acme" || n != "widget" {
		t.Fatalf("%q %q %v", o, n, ok)
	}
	for _, bad := range []string{"", "acme", "/w", "acme/", "a/b/c"} {
		if _, _, ok := SplitRepo(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}
