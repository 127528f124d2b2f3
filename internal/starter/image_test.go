package starter

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLowestNodeMajor(t *testing.T) {
	for rng, want := range map[string]int{
		">=18": 18, "^20.1.0": 20, "18.x || 20.x": 18, ">=16 <21": 16, "~18.2": 18, "20": 20,
		">= 18": 18, ">18.0.0": 18, "16 - 20": 16, "v20.11.0": 20, "22.x || >=20.9": 20,
		// unknown: no lower bound, not a version, absurd
		"*": -1, "<20": -1, "": -1, "lts/*": -1, ">=999": -1, ">=0": -1, "^1.0.0": -1,
		strings.Repeat(">=18 ", 100): -1, "latest": -1, ">=18 || *": -1,
	} {
		got, ok := lowestNodeMajor(rng)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("lowestNodeMajor(%q) = %d, want %d", rng, got, want)
		}
	}
}

func TestLowestPython(t *testing.T) {
	for spec, want := range map[string]string{
		">=3.9": "3.9", ">=3.8,<4": "3.8", "~=3.10": "3.10", "==3.11.*": "3.11", ">=3.9, !=3.9.1": "3.9",
		">=3.10, <4": "3.10", ">=2.7": "", "<3.12": "", "nonsense": "", ">=3.999": "",
	} {
		got, ok := lowestPython(spec)
		if !ok {
			got = ""
		}
		if got != want {
			t.Errorf("lowestPython(%q) = %q, want %q", spec, got, want)
		}
	}
}

// The image a project's files name, and the hostile ones ignored or
// refused with the file named.
func TestProjectImages(t *testing.T) {
	for _, c := range []struct {
		file, body, kind, want, err string
	}{
		{"go.mod", "module x\n\ngo 1.26.0\n\ntoolchain go1.26.8\n", "go", "golang:1.26.8", ""},
		{"go.mod", "module x\n\ngo 1.21\n", "go", "golang:1.21", ""},
		{"go.mod", "module x\n\ngo 1.27rc1\n", "go", "golang:1.27rc1", ""},
		{"go.mod", "module x\n", "go", "golang:1.26", ""},
		{"go.mod", "module x\n\ngo 1.26\n\ntoolchain default\n", "go", "golang:1.26", ""},
		{"go.mod", "module x\n\ngo 1.26 junk\n", "go", "", "go directive expects exactly one argument"},
		{"go.mod", "module x\n\ngo 2.0.0\n", "go", "", `go "2.0.0": want go 1.N`},
		{"go.mod", "module x\n\ngo " + strings.Repeat("1", 2<<20) + "\n", "go", "", "larger than 1048576 bytes"},
		{".nvmrc", "lts/iron\n", "node", "node:22", ""},
		{".node-version", "20.11.1\n", "node", "node:20", ""},
		{"pyproject.toml", "[project]\nrequires-python = \">=3.11\"\n", "python", "python:3.11", ""},
		{"pyproject.toml", "[project]\nname = \"x\"\n", "python", "python:3.13", ""},
		{"pyproject.toml", "[project\n", "python", "", "pyproject.toml: toml"},
		{"rust-toolchain", "1.79.0\n", "rust", "rust:1.79.0", ""},
		{"rust-toolchain.toml", "[toolchain]\nchannel = \"nightly-2024-01-01\"\n", "rust", "rust:1", ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if c.kind == "rust" {
			os.WriteFile(filepath.Join(dir, "Cargo.toml"), []byte("[package]\nname = \"x\"\n"), 0o644)
		}
		ti, _, err := projectImage(dir, &Project{kind: c.kind})
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %q: err %v, want %q", c.file, trunc(c.body), err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s %q: %v", c.file, trunc(c.body), err)
		case ti.image != c.want:
			t.Errorf("%s %q: image %q, want %q", c.file, trunc(c.body), ti.image, c.want)
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// The engines note says why a range was ignored.
func TestNodeEnginesIgnored(t *testing.T) {
	ti, err := nodeImage(t.TempDir(), ">=999")
	if err != nil || ti.image != defaultNodeImage || !strings.Contains(ti.note, `engines.node ">=999" names no lowest Node major between 4 and 99`) {
		t.Fatalf("%+v %v", ti, err)
	}
}

// The default branch: origin/HEAD of a real clone wins over the rest.
func TestReadDefaultBranch(t *testing.T) {
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	up := t.TempDir()
	git(up, "init", "-q", "-b", "develop")
	git(up, "commit", "-q", "--allow-empty", "-m", "x")
	git(up, "branch", "feature")
	clone := filepath.Join(t.TempDir(), "c")
	git(up, "clone", "-q", up, clone)
	git(clone, "checkout", "-q", "-b", "mine")
	if b := DefaultBranch(t.Context(), clone); b != (Branch{"develop", "origin/HEAD"}) {
		t.Fatalf("clone: %+v", b)
	}
	if b := DefaultBranch(t.Context(), up); b != (Branch{"main", "default"}) {
		t.Fatalf("two branches, no origin, no init.defaultBranch: %+v", b)
	}
	// a branch name that would be a pattern in a workflow filter is not used
	odd := t.TempDir()
	git(odd, "init", "-q", "-b", "a+b")
	if b := DefaultBranch(t.Context(), odd); b.Name != "main" {
		t.Fatalf("glob branch: %+v", b)
	}
}

func TestOnBranch(t *testing.T) {
	wf := []byte("on:\n  push:\n    branches: [main]\n")
	for branch, want := range map[string]string{
		"master": "[master]", "v2": "[v2]", "release/1.x": "[release/1.x]", "1.0": `["1.0"]`, "on": `["on"]`, "main": "[main]",
	} {
		got, err := OnBranch(wf, branch)
		if err != nil || !strings.Contains(string(got), "    branches: "+want+"\n") {
			t.Errorf("%s: %s %v", branch, got, err)
		}
	}
	if got, _ := OnBranch([]byte("on: {push: {tags: ['v*']}}\n"), "master"); string(got) != "on: {push: {tags: ['v*']}}\n" {
		t.Errorf("a workflow without the filter changed: %s", got)
	}
}

func FuzzLowestNodeMajor(f *testing.F) {
	for _, s := range []string{">=18", "^20 || 22.x", "16 - 20", "*", ">= 18 <21"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, ok := lowestNodeMajor(s); ok && (m < minNodeMajor || m > maxNodeMajor) {
			t.Fatalf("%q: major %d out of bounds", s, m)
		}
		if v, ok := lowestPython(s); ok && !strings.HasPrefix(v, "3.") {
			t.Fatalf("%q: python %q", s, v)
		}
	})
}
