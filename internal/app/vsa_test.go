package app

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/keytest"
)

func summary(t *testing.T) (*vsa.Statement, []byte) {
	t.Helper()
	st, doc, err := vsa.Summarize(vsa.Input{Name: "r.bundle.tar.gz", Archive: &vsa.Archive{SHA256: strings.Repeat("0", 64)},
		Verdict: bundle.Refusal("usage", "", "")})
	if err != nil {
		t.Fatal(err)
	}
	return st, doc
}

// WriteSummary writes the document and the summary; an existing summary
// is refused and the document written for it removed again; an existing
// document is left as it was; Replace replaces both.
func TestWriteSummary(t *testing.T) {
	st, doc := summary(t)
	k, dir := keytest.New(t).Signer, t.TempDir()
	out, pol := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.policy.json")
	signedBy, err := WriteSummary(context.Background(), st, doc, SummaryOptions{Key: k, Out: out, Policy: pol})
	if err != nil || signedBy != k.KeyID() {
		t.Fatalf("%q, %v", signedBy, err)
	}
	if b, _ := os.ReadFile(pol); string(b) != string(doc) {
		t.Fatal("the policy document is not doc")
	}
	var env envelope.Envelope
	if err := json.Unmarshal(mustRead(t, out), &env); err != nil || env.PayloadType != vsa.PayloadType || env.Signatures[0].KeyID != k.KeyID() {
		t.Fatalf("the summary is not an envelope signed by the key: %+v, %v", env, err)
	}

	other := filepath.Join(dir, "o.policy.json")
	_, err = WriteSummary(context.Background(), st, doc, SummaryOptions{Key: k, Out: out, Policy: other})
	var fe *SummaryFileError
	if !errors.As(err, &fe) || fe.Path != out || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("existing summary: %v", err)
	}
	if _, err := os.Lstat(other); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a policy document was left without its summary")
	}

	if err := os.WriteFile(pol, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = WriteSummary(context.Background(), st, doc, SummaryOptions{Key: k, Out: filepath.Join(dir, "n.json"), Policy: pol})
	if !errors.As(err, &fe) || fe.Path != pol {
		t.Fatalf("existing document: %v", err)
	}
	if string(mustRead(t, pol)) != "mine" {
		t.Fatal("an existing document was replaced")
	}
	if _, err := WriteSummary(context.Background(), st, doc, SummaryOptions{Key: k, Out: out, Policy: pol, Replace: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSummary(context.Background(), st, doc, SummaryOptions{Out: out}); err == nil {
		t.Fatal("no signer accepted")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
