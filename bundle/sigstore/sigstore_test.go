package sigstore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
)

// vector is the part of bundle/testdata/vector.json (the worked example
// of docs/SPEC.md) that the Sigstore bundle is made of.
type vector struct {
	PublicKeyPEM string `json:"public_key_pem"`
	KeyID        string `json:"key_id"`
	Envelope     string `json:"envelope"`
}

const goldenPath = "testdata/vector.sigstore.json"

func loadVector(t *testing.T) vector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "vector.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vector
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVector: the Sigstore bundle of the worked example's envelope is
// testdata/vector.sigstore.json byte for byte (PROOFGATE_WRITE_VECTORS=1
// rewrites it), and sigstore-go verifies it with the example's key.
func TestVector(t *testing.T) {
	v := loadVector(t)
	got, err := sigstore.FromEnvelope([]byte(v.Envelope), v.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("PROOFGATE_WRITE_VECTORS") == "1" {
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Sigstore bundle differs from %s:\n%s", goldenPath, got)
	}
	pub, err := key.ParsePublic([]byte(v.PublicKeyPEM), "vector")
	if err != nil {
		t.Fatal(err)
	}
	var sb sgbundle.Bundle
	if err := sb.UnmarshalJSON(got); err != nil {
		t.Fatal(err)
	}
	if mt := sb.GetMediaType(); mt != sigstore.MediaType {
		t.Fatalf("media type %q", mt)
	}
	sv, err := signature.LoadED25519Verifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	tm := root.NewTrustedPublicKeyMaterialFromMapping(map[string]*root.ExpiringKey{
		v.KeyID: root.NewExpiringKey(sv, time.Time{}, time.Time{}),
	})
	ver, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		t.Fatal(err)
	}
	res, err := ver.Verify(&sb, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithKey()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Statement.GetSubject()); n != 3 {
		t.Fatalf("%d subjects, want 3", n)
	}
	rb, err := sigstore.Read(got)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Hint != v.KeyID {
		t.Fatalf("hint %q", rb.Hint)
	}
	if err := rb.SameEnvelope([]byte(v.Envelope)); err != nil {
		t.Fatal(err)
	}
}

func TestFromEnvelopeRefuses(t *testing.T) {
	v := loadVector(t)
	two := strings.Replace(v.Envelope, `"signatures":[`, `"signatures":[{"keyid":"","sig":"AAAA"},`, 1)
	for name, c := range map[string]struct{ env, hint string }{
		"not JSON":       {"{", v.KeyID},
		"two signatures": {two, v.KeyID},
		"bad base64":     {strings.Replace(v.Envelope, `"payload":"`, `"payload":"!`, 1), v.KeyID},
		"no hint":        {v.Envelope, ""},
	} {
		var se *sigstore.Error
		if _, err := sigstore.FromEnvelope([]byte(c.env), c.hint); !errors.As(err, &se) {
			t.Errorf("%s: err = %v, want *sigstore.Error", name, err)
		}
	}
}

func TestReadRefuses(t *testing.T) {
	v := loadVector(t)
	good, err := sigstore.FromEnvelope([]byte(v.Envelope), v.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"other media type": bytes.Replace(good, []byte("v0.3+json"), []byte("v0.1+json"), 1),
		"no hint":          bytes.Replace(good, []byte(`"hint": "`+v.KeyID+`"`), []byte(`"hint": ""`), 1),
		"message content":  []byte(`{"mediaType":"` + sigstore.MediaType + `","verificationMaterial":{"publicKey":{"hint":"x"}},"messageSignature":{"signature":"AAAA"}}`),
		"unknown field":    bytes.Replace(good, []byte(`"mediaType"`), []byte(`"extra": 1, "mediaType"`), 1),
		"too large":        make([]byte, sigstore.MaxSize+1),
	} {
		var se *sigstore.Error
		if _, err := sigstore.Read(b); !errors.As(err, &se) {
			t.Errorf("%s: err = %v, want *sigstore.Error", name, err)
		}
	}
	rb, err := sigstore.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	other := *rb
	other.Sig = bytes.Clone(rb.Sig)
	other.Sig[0] ^= 1
	if err := other.SameEnvelope([]byte(v.Envelope)); err == nil || !strings.Contains(err.Error(), "signature differs") {
		t.Fatalf("SameEnvelope = %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.sigstore.json")
	if err := sigstore.WriteFile(p, []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if err := sigstore.WriteFile(p, []byte("two"), false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write without replace: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("file replaced: %q", b)
	}
	if err := sigstore.WriteFile(p, []byte("two"), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("file not replaced: %q", b)
	}
}

// A member given twice (or under its proto name beside its JSON name) is
// refused before protojson reads the bundle.
func TestReadRefusesDuplicateMembers(t *testing.T) {
	for _, in := range []string{
		`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","mediaType":"x"}`,
		`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"a","hint":"b"}}}`,
	} {
		if _, err := sigstore.Read([]byte(in)); err == nil || !strings.Contains(err.Error(), "duplicate") {
			t.Errorf("%s: %v", in, err)
		}
	}
	// One reading only: a proto field name beside (or instead of) the JSON
	// name, a case variant, and a certificate beside the key are refused.
	env := `"dsseEnvelope":{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[{"sig":"AA=="}]}`
	ok := `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"a"}},` + env + `}`
	if _, err := sigstore.Read([]byte(ok)); err != nil {
		t.Fatalf("well-formed bundle refused: %v", err)
	}
	for _, in := range []string{
		`{"media_type":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"a"}},` + env + `}`,
		`{"MediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"a"}},` + env + `}`,
		`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"a"},"certificate":{"rawBytes":"AA=="}},` + env + `}`,
	} {
		if _, err := sigstore.Read([]byte(in)); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}
