package main

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/examples"
	"github.com/proofgate/proofgate/internal/starter"
)

// --action pins both example workflows by full SHA and leaves no
// placeholder (pin or comment) behind; anything but OWNER/REPO@<40 hex>
// is refused.
func TestPinAction(t *testing.T) {
	const ref = "acme/proofgate@0123456789abcdef0123456789abcdef01234567"
	for _, name := range workflowNames {
		b, err := examples.Workflows.ReadFile("workflows/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !starter.HasActionPlaceholder(b) {
			t.Fatalf("%s: the example has no placeholder pin", name)
		}
		got := string(starter.PinAction(b, ref))
		if starter.HasActionPlaceholder([]byte(got)) || strings.Contains(got, "PLACEHOLDER") || strings.Contains(got, "OWNER/") {
			t.Fatalf("%s: placeholder left:\n%s", name, got)
		}
		want := "uses: acme/proofgate@0123456789abcdef0123456789abcdef01234567"
		if name == "release-gate.yml" {
			want = "uses: acme/proofgate/verify@0123456789abcdef0123456789abcdef01234567"
		}
		if !strings.Contains(got, want) || !strings.Contains(got, "pinned by full commit SHA (proofgate init --action)") {
			t.Fatalf("%s: want %q:\n%s", name, want, got)
		}
	}
	for _, bad := range []string{
		"acme/proofgate@v1", "acme/proofgate@main", "acme/proofgate",
		"acme/proofgate@0123456789ABCDEF0123456789abcdef01234567",
		"acme/proofgate@0123456789abcdef0123456789abcdef0123456",
		"OWNER/proofgate@0123456789abcdef0123456789abcdef01234567",
		"acme/proofgate@" + starter.ActionPlaceholderSHA,
		"acme/../x@0123456789abcdef0123456789abcdef01234567",
		"acme/proofgate@0123456789abcdef0123456789abcdef01234567\n",
		"https://github.com/acme/proofgate@0123456789abcdef0123456789abcdef01234567",
	} {
		if err := checkActionFlag(bad, true); err == nil {
			t.Errorf("--action %q accepted", bad)
		}
	}
	if err := checkActionFlag(ref, false); err == nil {
		t.Error("--action without --workflow accepted")
	}
	if err := checkActionFlag(ref, true); err != nil {
		t.Error(err)
	}
}
