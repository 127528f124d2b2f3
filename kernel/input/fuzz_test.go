package input_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/input"
)

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{vecRaw, `{"a":1,"A":2}`, `{"m":[{"x":1e400}]}`, `{"s":"\ud800"}`, `{"n":-0,"f":1E2}`,
		`{"format":"proofgate.input-manifest.v1"}`, `[]`, `{"a":{"b":{"c":[1,2,{"d":null}]}}}`, "{\"\u212a\":1,\"k\":2}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := input.Canonical(raw)
		if err != nil {
			var e *input.Error
			if !errors.As(err, &e) || e.Reason == "" {
				t.Fatalf("untyped refusal %v", err)
			}
			return
		}
		again, err := input.Canonical(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("canonical form %q is not a fixed point: %q %v", c, again, err)
		}
		if t2, err := canon.Transform(c); err != nil || !bytes.Equal(t2, c) {
			t.Fatalf("not RFC 8785: %q", c)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(c, &obj) != nil || obj == nil {
			t.Fatalf("canonical %q is not an object", c)
		}
	})
}

// FuzzRebuild feeds a manifest, a second link and a message of its
// choosing next to the vector's blobs.
func FuzzRebuild(f *testing.F) {
	f.Add([]byte(vecManifest), []byte(vecLink1), []byte(vecMsg1))
	f.Add([]byte(manifest(2, vecHash, vecLink1D, vecRestD)), []byte(link(1, vecMsg0D, vecLink0D)), []byte(`"x"`))
	f.Add([]byte(vecCanonical), []byte(`{}`), []byte(`{"messages":[]}`))
	f.Fuzz(func(t *testing.T, mf, l1, msg []byte) {
		m := vector()
		m.put(string(l1))
		m.put(string(msg))
		ref := m.put(string(mf))
		got, blobs, err := input.Rebuild(m.get, ref)
		if err != nil {
			var e *input.Error
			if !errors.As(err, &e) || e.Reason == "" {
				t.Fatalf("untyped refusal %v", err)
			}
			return
		}
		if len(blobs) == 0 || blobs[0] != ref {
			t.Fatalf("blobs read %v", blobs)
		}
		if c, err := input.Canonical(got); err != nil || !bytes.Equal(c, got) {
			t.Fatalf("rebuilt input %q is not canonical", got)
		}
		var man struct {
			Format    string `json:"format"`
			InputHash string `json:"input_hash"`
		}
		if json.Unmarshal(mf, &man) == nil && man.Format == input.ManifestFormat {
			if input.Hash(got) != man.InputHash {
				t.Fatalf("rebuilt %q does not hash to %s", got, man.InputHash)
			}
		} else if !bytes.Equal(got, mf) {
			t.Fatalf("plain input rebuilt as %q", got)
		}
	})
}
