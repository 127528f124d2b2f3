package vsa

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
)

// The archive's signed_at bounds a VSA's timeVerified, so it is read
// strictly: a duplicate or case-variant member is no time at all, never
// the last one of two.
func TestSignedAtStrict(t *testing.T) {
	env := func(payload string) []byte {
		return fmt.Appendf(nil, `{"payloadType":%q,"payload":%q,"signatures":[{"keyid":%q,"sig":%q}]}`,
			bundle.PayloadType, base64.StdEncoding.EncodeToString([]byte(payload)),
			strings.Repeat("ab", 32), base64.StdEncoding.EncodeToString(make([]byte, 64)))
	}
	if got := signedAt(env(`{"predicate":{"signed_at":"2026-12-02T07:00:00Z","x":1}}`)); got.IsZero() {
		t.Fatal("a plain signed_at was not read")
	}
	for _, p := range []string{
		`{"predicate":{"signed_at":"2026-12-02T07:00:00Z","signed_at":"2020-01-01T00:00:00Z"}}`,
		`{"predicate":{"signed_at":"2026-12-02T07:00:00Z","Signed_At":"2020-01-01T00:00:00Z"}}`,
		`{"predicate":{"Signed_At":"2020-01-01T00:00:00Z"}}`,
	} {
		if got := signedAt(env(p)); !got.IsZero() {
			t.Errorf("%s: read %v, want no time", p, got)
		}
	}
}
