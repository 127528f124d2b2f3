package keyless

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/sigstore"
)

// Pins without a trusted root, a trusted root without a pinned workflow,
// and malformed pins are refused; what pins nothing is no identity.
func TestPinsIdentity(t *testing.T) {
	const wf = "OWNER/proofgate/.github/workflows/proofgate.yml@refs/tags/v1"
	for _, tc := range []struct {
		pins Pins
		want string // "" accepted
	}{
		{Pins{SignerWorkflow: wf}, "need input trusted-root"},
		{Pins{SourceRepo: "acme/widget"}, "need input trusted-root"},
		{Pins{TrustedRoot: "trusted_root.json", SourceRepo: "acme/widget"}, "unpinned identity"},
		{Pins{TrustedRoot: "../trusted_root.json", SignerWorkflow: wf}, "not a clean path"},
		{Pins{TrustedRoot: "/trusted_root.json", SignerWorkflow: wf}, "not a clean path"},
		{Pins{TrustedRoot: "trusted_root.json", SignerWorkflow: "https://github.com/" + wf}, "no https://HOST/ prefix"},
		{Pins{TrustedRoot: "trusted_root.json", SignerWorkflow: "OWNER/proofgate/proofgate.yml"}, "is not OWNER/REPO/.github/workflows/FILE.yml"},
		{Pins{TrustedRoot: "trusted_root.json", SignerWorkflow: wf, SourceRef: "main"}, "not a full ref"},
		{Pins{TrustedRoot: "trusted_root.json", SignerWorkflow: wf, SourceRepo: "widget"}, "not OWNER/REPO"},
		{Pins{TrustedRoot: "trusted_root.json", SignerWorkflow: wf, SourceRepo: "a/b/c"}, "not OWNER/REPO"},
		{Pins{TrustedRoot: "trusted_root.json", SignerWorkflow: wf, Issuer: "http://issuer.example"}, "input certificate-oidc-issuer: "},
		{Pins{TrustedRoot: "trusted_root.json", SignerWorkflow: wf, Issuer: sigstore.DefaultIssuer, SourceRepo: "acme/widget", SourceRef: "refs/heads/main"}, ""},
	} {
		id, err := tc.pins.Identity()
		switch {
		case tc.want == "" && (err != nil || id == nil):
			t.Errorf("%+v: %v", tc.pins, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || id != nil):
			t.Errorf("%+v: %v, want %q", tc.pins, err, tc.want)
		}
	}
	for _, p := range []Pins{{}, {TrustedRoot: "trusted_root.json"}} {
		if id, err := p.Identity(); id != nil || err != nil {
			t.Errorf("%+v: %v %v, want no identity", p, id, err)
		}
	}
	id, _ := Pins{TrustedRoot: "r.json", SignerWorkflow: wf, SourceRepo: "acme/widget"}.Identity()
	if id.Name != "verify inputs" || id.SignerWorkflow != wf || id.SourceRepo != "acme/widget" || id.Issuer != "" || id.SourceRef != "" {
		t.Fatalf("%+v", *id)
	}
}
