package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
)

// complete returns the directory of a COMPLETE run.
func complete(t *testing.T) string {
	t.Helper()
	return completeWith(t, contractYAML)
}

// completeWith is complete with the contract y.
func completeWith(t *testing.T, y string) string {
	t.Helper()
	state, r := executedWith(t, y)
	repo := filepath.Dir(state)
	err := r.Decide(context.Background(), run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: repo, StateDir: state}})
	if err != nil {
		t.Fatal(err)
	}
	return r.Dir
}

// members reads an archive's members by name.
func members(t *testing.T, path string) map[string][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	files, err := archive.Read(bytes.NewReader(b), archive.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		out[f.Name] = f.Data
	}
	return out
}

// stubKeyless is a keyless signer whose material is fixed bytes: enough to
// see where Export puts the material (whether it vouches for the key is
// verification's business, tested with real Sigstore services elsewhere).
type stubKeyless struct{ material []byte }

func (stubKeyless) KeyID() string { return envelope.KeylessPrefix + strings.Repeat("ab", 32) }
func (s stubKeyless) SignEnvelope(context.Context, string, []byte) ([]byte, []byte, error) {
	return []byte("sig"), s.material, nil
}

// A key-signed export writes the archive (its SHA-256 as reported) and a
// companion made of its envelope; the archive has no material member.
func TestExportKey(t *testing.T) {
	dir, out := complete(t), filepath.Join(t.TempDir(), "r.bundle.tar.gz")
	x, err := Export(ExportOptions{RunDir: dir, Out: out, Key: keytest.New(t).Signer})
	if err != nil {
		t.Fatal(err)
	}
	if x.SigstorePath != strings.TrimSuffix(out, ".tar.gz")+".sigstore.json" {
		t.Fatalf("companion at %s", x.SigstorePath)
	}
	b, _ := os.ReadFile(out)
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != x.SHA256 {
		t.Fatal("reported SHA-256 is not the file's")
	}
	m := members(t, out)
	if _, ok := m[envelope.MaterialFile]; ok {
		t.Fatal("a key-signed archive carries material")
	}
	want, err := sigstore.FromEnvelope(m["attestation.dsse.json"], x.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(x.SigstorePath); !bytes.Equal(got, want) || !bytes.Equal(x.Sigstore, want) {
		t.Fatal("the companion is not the envelope's Sigstore bundle")
	}
}

// A keyless export's companion is the archive's material member, byte for
// byte.
func TestExportKeyless(t *testing.T) {
	dir, out := complete(t), filepath.Join(t.TempDir(), "r.bundle.tar.gz")
	material := []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`)
	x, err := Export(ExportOptions{RunDir: dir, Out: out, Keyless: stubKeyless{material}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(x.SigstorePath)
	if m := members(t, out)[envelope.MaterialFile]; !bytes.Equal(m, material) || !bytes.Equal(got, material) {
		t.Fatalf("member %q, companion %q", m, got)
	}
}

// What Export refuses writes nothing: a companion that is the archive, an
// existing companion without Replace, no signer or two, a run that is not
// COMPLETE (refused class). An existing archive is replaced only with
// Replace.
func TestExportRefuses(t *testing.T) {
	dir, k := complete(t), keytest.New(t).Signer
	tmp := t.TempDir()
	out := filepath.Join(tmp, "r.bundle.tar.gz")
	for name, o := range map[string]ExportOptions{
		"same file": {RunDir: dir, Out: out, Sigstore: out, Key: k},
		"no signer": {RunDir: dir, Out: out},
		"two":       {RunDir: dir, Out: out, Key: k, Keyless: stubKeyless{[]byte("m")}},
	} {
		if _, err := Export(o); err == nil {
			t.Errorf("%s: exported", name)
		}
		if _, err := os.Lstat(out); err == nil {
			t.Fatalf("%s: wrote the archive", name)
		}
	}
	comp := SigstoreName(out)
	if err := os.WriteFile(comp, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(ExportOptions{RunDir: dir, Out: out, Key: k}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("existing companion: %v", err)
	}
	if b, _ := os.ReadFile(comp); string(b) != "mine" {
		t.Fatal("the existing companion was replaced")
	}
	if _, err := os.Lstat(out); err == nil {
		t.Fatal("the archive was written beside an existing companion")
	}
	if _, err := Export(ExportOptions{RunDir: dir, Out: out, Key: k, Bundle: bundle.ExportOptions{Replace: true}}); err != nil {
		t.Fatal(err)
	}
	_, r := executed(t)
	_, err := Export(ExportOptions{RunDir: r.Dir, Out: filepath.Join(tmp, "pending.tar.gz"), Key: k})
	var xe *bundle.ExportError
	if !errors.As(err, &xe) || class(err) != exit.Refused {
		t.Fatalf("pending run: %v", err)
	}
}

// Products are written under the directory asked for, each at its path
// (the check writes it where the planner ignores it: a product in the
// work tree would leave the run stale for its approval),
// and an existing one is refused without Replace (a ProductsError).
func TestExportProducts(t *testing.T) {
	y := strings.Replace(contractYAML, "checks:\n", "checks:\n  - {id: p, run: [sh, -c, 'mkdir -p .proofgate/runs/out && printf bin > .proofgate/runs/out/app'], produces: [.proofgate/runs/out/app]}\n", 1)
	dir, tmp, k := completeWith(t, y), t.TempDir(), keytest.New(t).Signer
	products := filepath.Join(tmp, "p")
	x, err := Export(ExportOptions{RunDir: dir, Out: filepath.Join(tmp, "r.tar.gz"), Key: k, Products: products})
	if err != nil || len(x.Products) != 1 {
		t.Fatalf("%+v, %v", x, err)
	}
	if b, _ := os.ReadFile(filepath.Join(products, ".proofgate", "runs", "out", "app")); string(b) != "bin" {
		t.Fatalf("product %q", b)
	}
	_, err = Export(ExportOptions{RunDir: dir, Out: filepath.Join(tmp, "s.tar.gz"), Key: k, Products: products})
	var pe *ProductsError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrExist) || pe.Dir != products {
		t.Fatalf("existing product: %v", err)
	}
}

func TestIgnoredDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := IgnoredDir(dir, "why"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != "# why\n*\n" {
		t.Fatalf(".gitignore %q", b)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := IgnoredDir(dir, "why"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(b) != "own\n" {
		t.Fatal("an existing .gitignore was replaced")
	}
}
