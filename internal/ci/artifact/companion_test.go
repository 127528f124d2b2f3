package artifact_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
)

// packArchive writes entries as a bundle archive.
func packArchive(t *testing.T, entries ...archive.Entry) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := archive.Write(&b, entries); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// CheckCompanion compares a keyless archive's material member with its
// companion byte for byte (app.Export writes the companion: its tests hold
// that it is the member).
func TestKeylessCompanion(t *testing.T) {
	env := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"keyless:00","sig":"AA=="}]}`)
	material := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{}}`)
	keyless := packArchive(t, archive.BytesEntry("run.json", []byte("{}")), archive.BytesEntry(bundle.AttestationFile, env), archive.BytesEntry("attestation.sigstore.json", material))
	if err := artifact.CheckCompanion(keyless, material); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(material)
	flipped[len(flipped)/2] ^= 1
	if err := artifact.CheckCompanion(keyless, flipped); err == nil {
		t.Fatal("a changed keyless companion accepted")
	}
	if err := artifact.CheckCompanion(keyless, append(bytes.Clone(material), ' ')); err == nil {
		t.Fatal("a keyless companion with a trailing byte accepted")
	}
}

// A key-signed archive's companion is a key Sigstore bundle of its
// envelope whose hint is the envelope's key id.
func TestKeyCompanion(t *testing.T) {
	env := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"k1","sig":"AA=="}]}`)
	key := packArchive(t, archive.BytesEntry("run.json", []byte("{}")), archive.BytesEntry(bundle.AttestationFile, env))
	comp := func(env []byte, hint string) []byte {
		b, err := sigstore.FromEnvelope(env, hint)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if err := artifact.CheckCompanion(key, comp(env, "k1")); err != nil {
		t.Fatal(err)
	}
	if err := artifact.CheckCompanion(key, comp(env, "k2")); err == nil || !strings.Contains(err.Error(), `hint "k2"`) {
		t.Fatalf("another hint: %v", err)
	}
	other := bytes.Replace(env, []byte("AA=="), []byte("AQ=="), 1)
	if err := artifact.CheckCompanion(key, comp(other, "k1")); err == nil {
		t.Fatal("the companion of another signature accepted")
	}
	bare := packArchive(t, archive.BytesEntry("run.json", []byte("{}")))
	if err := artifact.CheckCompanion(bare, comp(env, "k1")); err == nil || !strings.Contains(err.Error(), "has no "+bundle.AttestationFile) {
		t.Fatalf("no envelope: %v", err)
	}
}

func TestCompanionName(t *testing.T) {
	if got := artifact.CompanionName("r1.bundle.tar.gz"); got != "r1.bundle.sigstore.json" {
		t.Fatal(got)
	}
}
