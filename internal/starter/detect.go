package starter

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/imagepin"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// A starter check that `proofgate init` writes.
type starterCheck struct {
	id, criterion, text string
	run                 []string
	dependsOn           string
	// Sandboxed (docker) contracts only:
	after   []string    // more depends_on: the fetch or install check
	network string      // "host" for the check that fetches dependencies
	caches  []string    // cache uses as rendered: "go-mod", "{name: go-mod, readonly: true}"
	env     [][2]string // the check's own environment over the defaults
	image   string      // set when it differs from defaults.image
}

// A detected project kind and its usual checks.
type Project struct {
	kind   string // go | node | python | rust
	marker string // the file that identified it
	checks []starterCheck
	// copy: the checks write into the work tree (cargo's target/), so a
	// docker contract gives them a copied workspace.
	copy bool
	// engines is package.json's engines.node; lockfile that it has
	// package-lock.json or npm-shrinkwrap.json (npm ci, else npm install).
	engines  string
	lockfile bool
	tool     toolImage // the official image, when the contract is sandboxed
	deps     bool      // go: the module has requirements (a fetch check)
	pin      imagepin.Pin
}

// goProcessEnv is the Go checks' own environment in a process contract
// (a sandboxed one sets it, and more, in its defaults).
var goProcessEnv = [][2]string{{"GOFLAGS", "-mod=readonly"}}

// maxManifest bounds the manifests init reads (package.json).
const maxManifest = 1 << 20

// Detect looks for the manifests of the supported ecosystems in
// dir, in a fixed order, and returns the starter checks of each found.
func Detect(dir string) ([]Project, error) {
	var out []Project
	if exists(filepath.Join(dir, "go.mod")) {
		out = append(out, Project{kind: "go", marker: "go.mod", checks: []starterCheck{
			{id: "go-vet", run: []string{"go", "vet", "./..."}, env: goProcessEnv, criterion: "vet-clean", text: "go vet reports nothing"},
			{id: "go-test", run: []string{"go", "test", "./..."}, env: goProcessEnv, dependsOn: "go-vet", criterion: "go-tests-pass", text: "the Go tests pass"},
		}})
	}
	if exists(filepath.Join(dir, "package.json")) {
		p, err := nodeProject(filepath.Join(dir, "package.json"))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	for _, m := range []string{"pyproject.toml", "setup.py"} {
		if exists(filepath.Join(dir, m)) {
			out = append(out, Project{kind: "python", marker: m, checks: []starterCheck{
				{id: "pytest", run: []string{"python3", "-m", "pytest"}, criterion: "python-tests-pass", text: "the Python tests pass"},
			}})
			break
		}
	}
	if exists(filepath.Join(dir, "Cargo.toml")) {
		out = append(out, Project{kind: "rust", marker: "Cargo.toml", copy: true, checks: []starterCheck{
			{id: "cargo-clippy", run: []string{"cargo", "clippy", "--", "-D", "warnings"}, criterion: "clippy-clean", text: "cargo clippy reports nothing"},
			{id: "cargo-test", run: []string{"cargo", "test"}, dependsOn: "cargo-clippy", criterion: "rust-tests-pass", text: "the Rust tests pass"},
		}})
	}
	if len(out) == 0 {
		return nil, usage(fmt.Errorf("no project found in %s: init knows go.mod, package.json, pyproject.toml, setup.py and Cargo.toml; write the contract by hand (docs/cli.md \"The contract\", see 'proofgate init --help')", dir))
	}
	return out, nil
}

// nodeProject takes the test, lint and build scripts that package.json
// declares; a package without any gets `npm test`, which fails until one
// exists (npm's own "no test specified" placeholder fails too).
func nodeProject(path string) (Project, error) {
	f, err := bounded.Open(path)
	var notRegular *bounded.NotRegularError
	if errors.As(err, &notRegular) {
		return Project{}, usage(err)
	}
	if err != nil {
		return Project{}, environment(err)
	}
	defer f.Close()
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
		Engines any               `json:"engines"`
	}
	if err := strictjson.ReadOpen(io.LimitReader(f, maxManifest+1), maxManifest, &pkg); err != nil {
		return Project{}, usage(fmt.Errorf("%s: %w", path, err))
	}
	p := Project{kind: "node", marker: "package.json"}
	if e, ok := pkg.Engines.(map[string]any); ok {
		p.engines, _ = e["node"].(string)
	}
	dir := filepath.Dir(path)
	p.lockfile = exists(filepath.Join(dir, "package-lock.json")) || exists(filepath.Join(dir, "npm-shrinkwrap.json"))
	prev := ""
	for _, s := range []struct{ script, id, criterion, text string }{
		{"lint", "npm-lint", "lint-clean", "the linter reports nothing"},
		{"build", "npm-build", "builds", "the package builds"},
		{"test", "npm-test", "node-tests-pass", "the Node tests pass"},
	} {
		if _, ok := pkg.Scripts[s.script]; !ok && s.script != "test" {
			continue
		}
		run := []string{"npm", "run", s.script}
		if s.script == "test" {
			run = []string{"npm", "test"}
		}
		p.checks = append(p.checks, starterCheck{id: s.id, run: run, dependsOn: prev, criterion: s.criterion, text: s.text})
		prev = s.id
	}
	return p, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// ContractName turns a directory name into the contract's name.
var nameJunk = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func ContractName(dir string) string {
	n := strings.Trim(nameJunk.ReplaceAllString(filepath.Base(dir), "-"), "-.")
	if n == "" {
		return "repository"
	}
	return n
}
