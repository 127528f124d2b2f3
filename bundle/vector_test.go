package bundle

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// vector is bundle/testdata/vector.json: the worked example of
// docs/SPEC.md.
type vector struct {
	PrivateKeyPEM string `json:"private_key_pem"`
	PublicKeyPEM  string `json:"public_key_pem"`
	KeyID         string `json:"key_id"`
	Statement     string `json:"statement"` // the exact payload bytes
	PAEHex        string `json:"pae_hex"`
	Envelope      string `json:"envelope"` // the exact attestation.dsse.json bytes
}

// vectorKey is RFC 8032 section 7.1 test 1's secret key.
func vectorKey() ed25519.PrivateKey {
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	return ed25519.NewKeyFromSeed(seed)
}

func vectorStatement() Statement {
	return Statement{
		Type: StatementType, PredicateType: PredicateType,
		Subject: []Subject{
			{Name: "contract.json", Digest: map[string]string{"sha256": strings.Repeat("1", 64)}},
			{Name: "events.ndjson", Digest: map[string]string{"sha256": strings.Repeat("2", 64)}},
			{Name: "run.json", Digest: map[string]string{"sha256": strings.Repeat("3", 64)}},
		},
		Predicate: Predicate{SignedAt: "2026-01-02T03:04:05Z", KeyID: "", Run: RunSummary{
			RunID: "20260102T030000.000Z-0123abcd", State: "COMPLETE",
			Repo:               "acme/widget",
			Worktree:           replay.Worktree{Digest: "sha256:" + strings.Repeat("7", 64)},
			ContractHash:       "sha256:" + strings.Repeat("4", 64),
			VerificationDigest: "sha256:" + strings.Repeat("5", 64),
			Chain:              Chain{Head: "sha256:" + strings.Repeat("6", 64), Length: 10},
			Checks:             []CheckSummary{{ID: "unit", Outcome: "passed", DurationMS: 1200, Runtime: &RuntimeSummary{Provider: "process"}}},
			Decisions:          []replay.Decision{{Decision: "approved", Actor: "alice", Time: "2026-01-02T03:04:00Z"}},
		}},
	}
}

func TestVector(t *testing.T) {
	priv := vectorKey()
	s, err := key.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	st := vectorStatement()
	st.Predicate.KeyID = s.ID
	st.Predicate.Run.Source.Commit = strings.Repeat("a", 40)
	st.Predicate.Run.Source.Tree = strings.Repeat("b", 40)
	payload, err := canon.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envelope.Sign(s, PayloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	privPEM, _ := cryptoutils.MarshalPrivateKeyToPEM(priv)
	pubPEM, _ := key.PublicPEM(s.Public)
	got := vector{PrivateKeyPEM: string(privPEM), PublicKeyPEM: string(pubPEM), KeyID: s.ID,
		Statement: string(payload), PAEHex: hex.EncodeToString(envelope.PAE(PayloadType, payload)), Envelope: string(env)}
	path := filepath.Join("testdata", "vector.json")
	if os.Getenv("PROOFGATE_WRITE_VECTOR") == "1" {
		b, _ := json.MarshalIndent(&got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want vector
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	// The stored key reproduces the stored signature byte for byte.
	stored, err := key.ParsePrivate([]byte(want.PrivateKeyPEM), "vector")
	if err != nil || !stored.Equal(priv) {
		t.Fatalf("vector key: %v", err)
	}
	if want.KeyID != s.ID || want.Statement != got.Statement || want.PAEHex != got.PAEHex || want.Envelope != string(env) {
		t.Fatalf("vector differs from what the code produces:\nwant %s\ngot  %s", want.Envelope, env)
	}
	// The stored envelope verifies with the stored public key from a trust store.
	ts := trust.New()
	if _, err := ts.Add([]byte(want.PublicKeyPEM), "", nil, nil); err != nil {
		t.Fatal(err)
	}
	e, p, err := envelope.Parse([]byte(want.Envelope), PayloadType, "vector")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ts.Lookup(e.Signatures[0].KeyID)
	if err != nil {
		t.Fatal(err)
	}
	if err := envelope.Verify(e, k.Public()); err != nil || !bytes.Equal(p, payload) {
		t.Fatalf("vector does not verify: %v", err)
	}
	// docs/SPEC.md carries the same worked example.
	spec, err := os.ReadFile(filepath.Join("..", "docs", "SPEC.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{want.KeyID, want.Statement, want.Envelope, strings.TrimSpace(want.PublicKeyPEM), strings.TrimSpace(want.PrivateKeyPEM)} {
		if !bytes.Contains(spec, []byte(s)) {
			t.Errorf("docs/SPEC.md lacks %q", s)
		}
	}
}
