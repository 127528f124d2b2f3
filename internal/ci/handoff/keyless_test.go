package handoff

import (
	"encoding/base64"
	"strings"
	"testing"
)

// jwt is a compact JWT with payload claims (header and signature are not
// read).
func jwt(claims string) string {
	return "e30." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".c2ln"
}

func TestDecodeClaims(t *testing.T) {
	full := `{"iss":"https://token.actions.githubusercontent.com","repository":"o/r","ref":"refs/pull/7/merge","sha":"` +
		strings.Repeat("a", 40) + `","job_workflow_ref":"o/r/.github/workflows/p.yml@refs/pull/7/merge","aud":"proofgate"}`
	c, err := DecodeClaims(jwt(full))
	if err != nil || c.Repository != "o/r" || c.Ref != "refs/pull/7/merge" || c.SHA != strings.Repeat("a", 40) ||
		c.JobWorkflowRef != "o/r/.github/workflows/p.yml@refs/pull/7/merge" || c.Issuer != "https://token.actions.githubusercontent.com" {
		t.Fatalf("DecodeClaims = %+v, %v", c, err)
	}
	for name, tok := range map[string]string{
		"two parts":      "e30." + base64.RawURLEncoding.EncodeToString([]byte(full)),
		"not base64":     "e30.!!.c2ln",
		"not JSON":       jwt("[1]"),
		"no ref":         jwt(`{"iss":"i","repository":"o/r","sha":"s","job_workflow_ref":"w"}`),
		"duplicate name": jwt(`{"iss":"i","iss":"j","repository":"o/r","ref":"r","sha":"s","job_workflow_ref":"w"}`),
		"too long":       jwt(full) + strings.Repeat("x", maxIDToken),
	} {
		if c, err := DecodeClaims(tok); err == nil {
			t.Errorf("%s: accepted %+v", name, c)
		}
	}
}

// FuzzDecodeClaims: no token panics, and an accepted one has every
// pinning claim.
func FuzzDecodeClaims(f *testing.F) {
	f.Add(jwt(`{"iss":"i","repository":"o/r","ref":"r","sha":"s","job_workflow_ref":"w"}`))
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := DecodeClaims(tok)
		if err == nil && (c.Issuer == "" || c.Repository == "" || c.Ref == "" || c.SHA == "" || c.JobWorkflowRef == "") {
			t.Fatalf("accepted %+v", c)
		}
	})
}
