package run

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
)

func sha256hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func digestOf(t *testing.T, v any) string {
	t.Helper()
	d, err := canon.Digest(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
