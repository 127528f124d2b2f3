package key

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateWritesKeyPairOnce(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key.pem")
	id, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v, want 0600", fi.Mode().Perm())
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != id || len(id) != 64 || strings.ToLower(id) != id {
		t.Errorf("id %q, loaded %q", id, s.ID)
	}
	pub, _, err := LoadPublic(filepath.Join(dir, "key.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(s.Public) {
		t.Error("public key file does not match the private key")
	}
	before, _ := os.ReadFile(p)
	if _, err := Generate(p); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Generate: %v, want ErrExist", err)
	}
	after, _ := os.ReadFile(p)
	if string(before) != string(after) {
		t.Fatal("Generate overwrote an existing key")
	}
	// An existing public key file also blocks generation, and nothing is left behind.
	p2 := filepath.Join(dir, "other.pem")
	os.WriteFile(filepath.Join(dir, "other.pub.pem"), []byte("x"), 0o644)
	if _, err := Generate(p2); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Generate over an existing .pub.pem: %v", err)
	}
	if _, err := os.Stat(p2); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("private key left behind")
	}
}

func openssl(t *testing.T, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is required for interop tests")
	}
	out, err := exec.Command("openssl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl %v: %v\n%s", args, err, out)
	}
	return out
}

func TestOpenSSLKeyLoadsAndIDIsSHA256OfSPKI(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.pem")
	openssl(t, "genpkey", "-algorithm", "ed25519", "-out", p)
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	der := filepath.Join(dir, "pub.der")
	openssl(t, "pkey", "-in", p, "-pubout", "-outform", "DER", "-out", der)
	b, _ := os.ReadFile(der)
	sum := sha256.Sum256(b)
	if want := hex.EncodeToString(sum[:]); s.ID != want {
		t.Fatalf("key id %s, sha256(openssl DER SPKI) %s", s.ID, want)
	}
	pubPEM := openssl(t, "pkey", "-in", p, "-pubout")
	pub, err := ParsePublic(pubPEM, "openssl")
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(s.Public) {
		t.Fatal("openssl public key differs")
	}
}

func TestLoadFromEnv(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.pem")
	id, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	t.Setenv("PG_TEST_KEY", string(b))
	s, err := Load("env:PG_TEST_KEY")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != id {
		t.Fatal("env key differs from file key")
	}
	if _, err := Load("env:PG_TEST_KEY_UNSET"); err == nil {
		t.Fatal("unset env var accepted")
	}
}

// TestErrorsNeverEchoKeyMaterial feeds broken and foreign keys and checks
// that no part of the file's base64 body appears in the error.
func TestErrorsNeverEchoKeyMaterial(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.pem")
	if _, err := Generate(good); err != nil {
		t.Fatal(err)
	}
	gb, _ := os.ReadFile(good)
	body := strings.Split(string(gb), "\n")[1]
	rsa := filepath.Join(dir, "rsa.pem")
	openssl(t, "genpkey", "-algorithm", "rsa", "-pkeyopt", "rsa_keygen_bits:1024", "-out", rsa)
	rb, _ := os.ReadFile(rsa)
	cases := map[string][]byte{
		"corrupt":   []byte(strings.Replace(string(gb), body, body[:20]+"!!!!"+body[24:], 1)),
		"truncated": gb[:len(gb)/2],
		"rsa":       rb,
		"wrongtype": []byte(strings.Replace(string(gb), "PRIVATE KEY", "EC PRIVATE KEY", -1)),
		"trailing":  append(append([]byte{}, gb...), []byte("SECRETTRAILER")...),
		"raw":       []byte(body),
	}
	for name, b := range cases {
		p := filepath.Join(dir, name+".pem")
		os.WriteFile(p, b, 0o600)
		_, err := Load(p)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		msg := err.Error()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "-----") || len(line) < 8 {
				continue
			}
			for i := 0; i+8 <= len(line); i += 4 {
				if strings.Contains(msg, line[i:i+8]) {
					t.Errorf("%s: error %q echoes key material %q", name, msg, line[i:i+8])
					break
				}
			}
		}
		if !strings.Contains(msg, p) {
			t.Errorf("%s: error %q does not name the file", name, msg)
		}
	}
	if _, err := Load(rsa); !errors.Is(err, ErrNotEd25519) {
		t.Errorf("rsa key: %v, want ErrNotEd25519", err)
	}
}

func TestIDKnownVector(t *testing.T) {
	// RFC 8032 test 1 public key.
	pub, _ := hex.DecodeString("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	id, err := ID(ed25519.PublicKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	der := append([]byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}, pub...)
	sum := sha256.Sum256(der)
	if id != hex.EncodeToString(sum[:]) {
		t.Fatalf("id %s", id)
	}
}
