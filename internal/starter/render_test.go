package starter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/imagepin"
	"github.com/proofgate/proofgate/kernel/contract"
)

// The sandboxed contract for each ecosystem, byte for byte
// (testdata/golden; PROOFGATE_UPDATE_GOLDEN=1 rewrites them). The
// Node and Python ones carry their install in run-lifetime caches
// (lifetime: run, ADR 0032).
func TestSandboxedGolden(t *testing.T) {
	dig := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	pin := func(image string) imagepin.Pin {
		return imagepin.Pin{Image: image, Ref: image + "@" + dig, Digest: dig, Source: imagepin.SourceRegistry, Registry: imagepin.DockerHub}
	}
	cases := map[string]struct {
		files map[string]string
		sub   string
	}{
		"node": {files: map[string]string{
			"package.json":      `{"name": "x", "engines": {"node": ">=20.9 <23"}, "scripts": {"lint": "eslint .", "build": "tsc", "test": "mocha"}}`,
			"package-lock.json": `{}`,
		}},
		"node-subdir": {sub: "web", files: map[string]string{
			"web/package.json": `{"scripts": {"test": "node --test"}}`,
			"web/.nvmrc":       "v18.19.0\n",
		}},
		"python": {files: map[string]string{
			"pyproject.toml": "[project]\nname = \"x\"\nrequires-python = \">=3.10, <4\"\n",
		}},
		"rust": {files: map[string]string{
			"Cargo.toml":          "[package]\nname = \"x\"\nrust-version = \"1.74\"\n",
			"rust-toolchain.toml": "[toolchain]\nchannel = \"1.80.0\"\n",
		}},
		"go-node": {files: map[string]string{
			"go.mod":       "module x\n\ngo 1.25.3\n",
			"package.json": `{"scripts": {"test": "jest"}}`,
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for f, body := range c.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wd := filepath.Join(root, c.sub)
			prs, err := Detect(wd)
			if err != nil {
				t.Fatal(err)
			}
			p := &Starter{Root: filepath.Join(filepath.Dir(root), "repo"), Dir: filepath.Join(filepath.Dir(root), "repo", c.sub), Runtime: "docker", Projects: prs}
			for i := range p.Projects {
				pr := &p.Projects[i]
				if pr.tool, pr.deps, err = projectImage(wd, pr); err != nil {
					t.Fatal(err)
				}
				pr.pin = pin(pr.tool.image)
			}
			got := p.Contract()
			golden(t, filepath.Join("testdata", "golden", name+".yaml"), got)
			// Valid as rendered (run-lifetime caches included): no error,
			// no warning.
			r, err := contract.Parse("contract.yaml", got, "")
			if err != nil {
				t.Fatalf("the rendered contract is invalid: %v\n%s", err, got)
			}
			if w := r.Warnings("contract.yaml"); len(w) > 0 {
				t.Fatalf("warnings: %v", w)
			}
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if os.Getenv("PROOFGATE_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (PROOFGATE_UPDATE_GOLDEN=1 rewrites it):\n%s", path, got)
	}
}
