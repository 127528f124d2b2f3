package bundle

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/envelope"
)

// TestPayloadMustBeCanonical: the statement is signed as RFC 8785
// canonical JSON. A payload with a duplicate key (Go keeps the last, other
// parsers the first) or a key spelled in another case (Go matches field
// names case-insensitively) reads differently in another verifier, so even
// when a trusted key signed it, it is malformed.
func TestPayloadMustBeCanonical(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	fs := files(t, export(t, f, k, ExportOptions{}))
	resignRaw := func(fn func(string) string) []byte {
		return repack(t, edit(fs, AttestationFile, func(b []byte) []byte {
			_, p, err := envelope.Parse(b, PayloadType, "a")
			if err != nil {
				t.Fatal(err)
			}
			q := fn(string(p))
			if q == string(p) {
				t.Fatal("edit did not apply")
			}
			env, err := envelope.Sign(k.s, PayloadType, []byte(q))
			if err != nil {
				t.Fatal(err)
			}
			return env
		}))
	}
	cases := map[string][]byte{
		"duplicate key, first differs": resignRaw(func(p string) string {
			return strings.Replace(p, `"repo":"acme/widget"`, `"repo":"evil/other","repo":"acme/widget"`, 1)
		}),
		"key in another case": resignRaw(func(p string) string {
			return strings.Replace(p, `"repo":"acme/widget"`, `"REPO":"evil/other","repo":"acme/widget"`, 1)
		}),
		"whitespace": resignRaw(func(p string) string { return strings.Replace(p, `{`, "{ ", 1) }),
		"duplicate key_id": resignRaw(func(p string) string {
			return strings.Replace(p, `"predicate":{`, `"predicate":{"key_id":"x",`, 1)
		}),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(in), st, anyRun)
			if reasonOf(err) != Malformed {
				t.Fatalf("got %v, want malformed", err)
			}
		})
	}
	// The genuine bundle still verifies.
	if _, err := Verify(bytes.NewReader(repack(t, fs)), st, anyRun); err != nil {
		t.Fatal(err)
	}
}
