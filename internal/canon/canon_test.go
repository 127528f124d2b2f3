package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"
)

func TestMarshalIsRFC8785(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": "x", "é": true, "A": nil}, `{"A":null,"a":"x","b":1,"é":true}`},
		{map[string]any{"html": "<&>"}, `{"html":"<&>"}`}, // encoding/json's \u003c escapes undone
		{[]any{1.0, 1e21, 0.000001, math.Copysign(0, -1)}, `[1,1e+21,0.000001,0]`},
		{map[string]any{"\u20ac": 1, "\U0001F600": 2, "\ufb01": 3}, `{"€":1,"😀":2,"ﬁ":3}`}, // UTF-16 order
		{"line\nbreak\u2028", `"line\nbreak` + "\u2028" + `"`},
	} {
		got, err := Marshal(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("Marshal(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestDigest(t *testing.T) {
	d, err := Digest(map[string]int{"b": 2, "a": 1})
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256([]byte(`{"a":1,"b":2}`))
	if want := "sha256:" + hex.EncodeToString(s[:]); d != want {
		t.Fatalf("Digest = %s, want %s", d, want)
	}
	if _, err := Transform([]byte(`{"a":1,}`)); err == nil {
		t.Fatal("invalid JSON canonicalised")
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Fatal("a func marshalled")
	}
}
