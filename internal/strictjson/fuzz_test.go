package strictjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// fuzzDoc is a small closed format with nesting, a map and a slice.
type fuzzDoc struct {
	Version int               `json:"version"`
	State   string            `json:"state"`
	Keys    []key             `json:"keys"`
	Sub     *fuzzDoc          `json:"sub"`
	Meta    map[string]string `json:"meta"`
}

var fuzzSeeds = []string{
	`{"version":1,"keys":[{"id":"a","status":"revoked","Status":"active"}]}`,
	`{"state":"COMPLETE","State":"AWAITING_APPROVAL"}`,
	`{"state":"COMPLETE","state":"AWAITING_APPROVAL"}`,
	`{"sub":{"sub":{"keys":[{"id":"x","iD":"y"}]}}}`,
	`{"meta":{"a":"1","a":"2"}}`,
	"{\"\u212aeys\":[]}",
	`{"version":1} trailing`,
	`{"x":{"y":1,"y":2}}`,
	// accepted:
	`{"meta":{"a":"1","A":"2"},"version":2}`,
	`{"keys":[{"id":"a","at":"2024-01-02T03:04:05Z"}]}`,
	`[1,2,{"a":{"b":[]}}]`,
	`"just a string"`,
	`{"version":1e2}`,
	`{"state":null,"keys":null,"sub":null}`,
}

// FuzzDecode: the decoder never panics; whatever it accepts has no
// duplicate names (checked by jsontext independently) and no case variant
// of a field (encoding/json, which matches names case-insensitively, reads
// the same value); re-encoding and decoding again is stable.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a any
		if err := Decode(b, &a); err == nil {
			if err := noDuplicates(b); err != nil {
				t.Fatalf("accepted %q with duplicate names: %v", b, err)
			}
			again, err := json.Marshal(a)
			if err != nil {
				t.Fatalf("re-encode %q: %v", b, err)
			}
			var a2 any
			if err := Decode(again, &a2); err != nil || !reflect.DeepEqual(a, a2) {
				t.Fatalf("re-decode of %q is not stable: %v", again, err)
			}
		}
		for _, open := range []bool{false, true} {
			var strict fuzzDoc
			if err := decode(b, &strict, open); err != nil {
				continue
			}
			if err := noDuplicates(b); err != nil {
				t.Fatalf("accepted %q into a struct with duplicate names: %v", b, err)
			}
			var loose fuzzDoc
			if json.Unmarshal(b, &loose) == nil && !reflect.DeepEqual(strict, loose) {
				t.Fatalf("accepted %q, which encoding/json reads differently:\n%+v\n%+v", b, strict, loose)
			}
			if !open && hasCaseVariant(b) {
				t.Fatalf("accepted %q with a case-variant name", b)
			}
		}
	})
}

func noDuplicates(b []byte) error {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	_, err := d.ReadValue()
	return err
}

// hasCaseVariant reports whether any member name in b differs from one of
// fuzzDoc's or key's names only by case: in a closed format every accepted
// name is a field name, so a variant must have been refused.
func hasCaseVariant(b []byte) bool {
	names := []string{"version", "state", "keys", "sub", "meta", "id", "status", "at"}
	d := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true))
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		if tok.Kind() != '"' || !d.StackPointer().IsValid() {
			continue
		}
		kind, n := d.StackIndex(d.StackDepth())
		if kind != '{' || n%2 != 1 {
			continue // a string value, not a member name
		}
		if strings.HasSuffix(string(d.StackPointer().Parent()), "/meta") {
			continue // map keys are data
		}
		for _, f := range names {
			if strings.EqualFold(f, tok.String()) && f != tok.String() {
				return true
			}
		}
	}
}

func TestFuzzSeedsRefused(t *testing.T) {
	// Every hostile seed is refused in both modes.
	for _, s := range fuzzSeeds[:8] {
		for _, open := range []bool{false, true} {
			var d fuzzDoc
			if err := decode([]byte(s), &d, open); err == nil {
				t.Errorf("open=%v: accepted %s", open, s)
			}
		}
	}
}
