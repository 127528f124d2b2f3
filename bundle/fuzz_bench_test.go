package bundle

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/bundle/archive"
)

// FuzzVerify feeds arbitrary bytes to the verifier, seeded with a real
// bundle: no panic, a typed reason on every refusal, bounded memory.
func FuzzVerify(f *testing.F) {
	fx := makeRun(f, runOpts{approve: []string{"alice"}})
	k := newKey(f)
	st := storeWith(f, k)
	good := export(f, fx, k, ExportOptions{})
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	lim := archive.Limits{MaxEntries: 64, MaxEntrySize: 1 << 20, MaxTotalSize: 4 << 20, MaxRatio: 200, RatioSlack: 1 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := Verify(bytes.NewReader(b), st, VerifyOptions{AnySource: true, AnyContract: true, Limits: &lim, RequireApprovals: 1})
		if err != nil && reasonOf(err) == "" {
			t.Fatalf("untyped refusal: %v", err)
		}
	})
}

// bigRun is a COMPLETE run whose check printed 100 MiB.
func bigRun(b *testing.B) *fixture {
	b.Helper()
	return makeRun(b, runOpts{approve: []string{"alice"}, script: "head -c 104857600 /dev/urandom"})
}

// BenchmarkExportVerify100MiB compares export and verify of a run holding
// 100 MiB of check output with SHA-256 over the same bytes.
func BenchmarkExportVerify100MiB(b *testing.B) {
	fx := bigRun(b)
	k := newKey(b)
	st := storeWith(b, k)
	var blob []byte
	filepath.WalkDir(filepath.Join(fx.runDir, "blobs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, _ := d.Info(); fi.Size() > int64(len(blob)) {
				blob, _ = os.ReadFile(p)
			}
		}
		return nil
	})
	if len(blob) != 100<<20 {
		b.Fatalf("largest blob is %d bytes", len(blob))
	}
	out := filepath.Join(b.TempDir(), "b.tgz")
	blobPath := filepath.Join(fx.runDir, "blobs", "sha256", fmt.Sprintf("%x", sha256.Sum256(blob)))
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for i := 0; i < b.N; i++ {
			f, err := os.Open(blobPath)
			if err != nil {
				b.Fatal(err)
			}
			h := sha256.New()
			io.Copy(h, f)
			f.Close()
		}
	})
	b.Run("export", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for i := 0; i < b.N; i++ {
			if _, err := ExportFile(fx.runDir, out, k.s, ExportOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(int64(len(blob)))
		for i := 0; i < b.N; i++ {
			f, _ := os.Open(out)
			if _, err := Verify(f, st, VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 1}); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	if os.Getenv("PROOFGATE_BENCH_FILE") != "" {
		os.WriteFile(os.Getenv("PROOFGATE_BENCH_FILE"), blob, 0o644)
	}
}
