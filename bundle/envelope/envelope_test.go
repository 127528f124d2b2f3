package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/keytest"
)

func signer(t *testing.T) (*key.Signer, string) {
	t.Helper()
	k := keytest.New(t)
	return k.Signer, k.PubPath
}

func TestSignVerifyAndOpenSSLInterop(t *testing.T) {
	s, pubPath := signer(t)
	payload := []byte(`{"hello":"world"}`)
	b, err := Sign(s, "application/x-test", payload)
	if err != nil {
		t.Fatal(err)
	}
	env, got, err := Parse(b, "application/x-test", "env")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) || env.Signatures[0].KeyID != s.ID {
		t.Fatalf("envelope %s", b)
	}
	if err := Verify(env, s.Public); err != nil {
		t.Fatal(err)
	}
	// openssl, an independent implementation, accepts the signature over our PAE bytes.
	dir := t.TempDir()
	sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	os.WriteFile(filepath.Join(dir, "sig.bin"), sig, 0o644)
	pae := PAE("application/x-test", payload)
	if want := "DSSEv1 18 application/x-test 17 {\"hello\":\"world\"}"; string(pae) != want {
		t.Fatalf("PAE %q", pae)
	}
	os.WriteFile(filepath.Join(dir, "pae.bin"), pae, 0o644)
	out, err := exec.Command("openssl", "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", pubPath,
		"-sigfile", filepath.Join(dir, "sig.bin"), "-in", filepath.Join(dir, "pae.bin")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	// And refuses it over other bytes.
	os.WriteFile(filepath.Join(dir, "pae.bin"), append(pae, ' '), 0o644)
	if err := exec.Command("openssl", "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", pubPath,
		"-sigfile", filepath.Join(dir, "sig.bin"), "-in", filepath.Join(dir, "pae.bin")).Run(); err == nil {
		t.Fatal("openssl accepted a signature over other bytes")
	}
	// sigstore's own DSSE verifier agrees (keyid stripped, see Verify).
	other, _ := signer(t)
	if err := Verify(env, other.Public); err == nil {
		t.Fatal("verified with another key")
	}
}

func TestTamperRefused(t *testing.T) {
	s, _ := signer(t)
	b, _ := Sign(s, "t", []byte("payload"))
	var env Envelope
	json.Unmarshal(b, &env)
	env.Payload = base64.StdEncoding.EncodeToString([]byte("payloae"))
	if err := Verify(&env, s.Public); err == nil {
		t.Fatal("tampered payload verified")
	}
	env.Payload = base64.StdEncoding.EncodeToString([]byte("payload"))
	env.PayloadType = "u"
	if err := Verify(&env, s.Public); err == nil {
		t.Fatal("changed payload type verified")
	}
}

func TestParseStrict(t *testing.T) {
	s, _ := signer(t)
	b, _ := Sign(s, "t", []byte("p"))
	str := string(b)
	sig := func(e string) string { return strings.Replace(str, `"signatures":[`, `"signatures":[`+e, 1) }
	cases := map[string]string{
		"unknown field":  strings.Replace(str, `{"payload"`, `{"x":1,"payload"`, 1),
		"wrong type":     strings.Replace(str, `"payloadType":"t"`, `"payloadType":"u"`, 1),
		"two sigs":       sig(`{"keyid":"a","sig":"` + strings.Repeat("A", 86) + `=="},`),
		"no sigs":        str[:strings.Index(str, `"signatures":[`)] + `"signatures":[]}`,
		"url base64":     strings.Replace(str, `"payload":"cA=="`, `"payload":"cA"`, 1),
		"trailing":       str + "{}",
		"short sig":      strings.Replace(str, `"sig":"`, `"sig":"AAAA`, 1),
		"not json":       "[",
		"payload number": strings.Replace(str, `"payload":"cA=="`, `"payload":1`, 1),
	}
	for name, in := range cases {
		if _, _, err := Parse([]byte(in), "t", "attestation.dsse.json"); err == nil {
			t.Errorf("%s accepted: %s", name, in)
		}
	}
	if _, _, err := Parse(b, "t", "x"); err != nil {
		t.Fatal(err)
	}
}

// TestParseRefusesCollidingMembers: a second payload or payloadType, or a
// case variant of one, would be read differently by another verifier.
func TestParseRefusesCollidingMembers(t *testing.T) {
	s, _ := signer(t)
	b, _ := Sign(s, "t", []byte("p"))
	str := string(b)
	for name, tc := range map[string]struct{ in, path string }{
		"duplicate payload":     {strings.Replace(str, `"payload":"cA=="`, `"payload":"cQ==","payload":"cA=="`, 1), "payload"},
		"case variant payload":  {strings.Replace(str, `"payload":"cA=="`, `"Payload":"cQ==","payload":"cA=="`, 1), "Payload"},
		"duplicate keyid":       {strings.Replace(str, `"keyid":`, `"keyid":"x","keyid":`, 1), "signatures[0].keyid"},
		"case variant sig":      {strings.Replace(str, `"sig":`, `"SIG":"AAAA","sig":`, 1), "signatures[0].SIG"},
		"case variant top type": {strings.Replace(str, `"payloadType":"t"`, `"payloadType":"t","PayloadType":"u"`, 1), "PayloadType"},
	} {
		_, _, err := Parse([]byte(tc.in), "t", "attestation.dsse.json")
		if err == nil {
			t.Errorf("%s accepted: %s", name, tc.in)
		} else if !strings.Contains(err.Error(), "attestation.dsse.json: "+tc.path+": ") {
			t.Errorf("%s: error %q does not name %s", name, err, tc.path)
		}
	}
}
