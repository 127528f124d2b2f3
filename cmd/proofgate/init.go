package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/examples"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/internal/starter"
)

// initFlags are the flags of `proofgate init`.
type initFlags struct {
	docker         string
	workflow       bool
	action         string
	registryMirror string
	keyDir         string
	noKey          bool
	asJSON         bool
}

// initPlan is everything init will write, decided before anything is.
type initPlan struct {
	root, wd     string
	contractPath string
	contract     []byte
	workflows    map[string][]byte // absolute path → content
	keyPath      string
	ignore       []string // .gitignore lines to append
	starter      *starter.Starter
	repo         string // OWNER/NAME from the origin remote, or the placeholder
	branch       starter.Branch
	action       string // --action: the workflows' pin of the ProofGate action, or "" (placeholder)
}

// addInitCommands registers init and doctor.
func addInitCommands(root *cobra.Command, g *globals) {
	root.AddCommand(initCmd(g), doctorCmd(g))
}

func initCmd(g *globals) *cobra.Command {
	var f initFlags
	c := &cobra.Command{
		Use:   "init [--workflow] [--docker IMAGE] [--registry-mirror URL] [--key-dir DIR | --no-key] [--json]",
		Short: "Write a starter contract, .gitignore entries, workflows and a signing key",
		Long: `Detect the project in the current directory (go.mod, package.json,
pyproject.toml or setup.py, Cargo.toml) and write a starter contract
(--contract, default .proofgate/contract.yaml) with its usual checks as argv.

With --workflow (or --docker IMAGE) the checks are sandboxed (runtime:
docker), so that they run in the GitHub Action, whose container has no
toolchains: each project's official image (golang, node, python, rust)
at the version its files name (go.mod toolchain or go line, package.json
engines.node or .nvmrc, requires-python, rust-toolchain or rust-version),
pinned by the digest the registry gives now; one check with the network
fetches dependencies into a cache (go mod download, npm ci, pip wheel,
cargo fetch) and the others run with network none and mount it read-only
(docs/adr/0030). Registry: the --registry-mirror URL only (or
$PROOFGATE_REGISTRY_MIRROR; for air-gapped machines: Docker Hub is then
never asked), else the Docker daemon's registry mirrors, then Docker Hub.
--docker IMAGE without a digest is pinned from the local daemon when it
has the image (its repo digest; for an image built here and never pushed,
NAME[:TAG]@sha256:<image ID>, which names it on this daemon only), else
from the registry. When no registry answers, init says so and writes
nothing.

Without either, the checks run as plain processes (runtime: process,
unsandboxed and recorded as such) with PATH and HOME taken from the
harness (env_from_host): for this machine only; they will not run in the
GitHub Action.

It adds the state directory's runs/ to .gitignore (appending; never
rewriting it), with --workflow writes .github/workflows/proofgate.yml and
release-gate.yml (examples/workflows, triggered on the repository's
default branch: origin/HEAD, else the only branch, else init.defaultBranch,
else main; the action's OWNER/SHA placeholder kept), and generates an
Ed25519 signing key OUTSIDE the repository (--key-dir, default
<user config dir>/proofgate/keys; a directory inside the work tree is
refused). It then prints the commands that finish the setup: gh secret set
and trust add.

Nothing is ever overwritten: if any file init would write exists, it writes
nothing and exits 2 naming the file. Exit 4 when a registry cannot be
reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := planInit(cmd.Context(), g, f)
			if err != nil {
				return err
			}
			id, written, err := p.write()
			if err != nil {
				return err
			}
			return p.report(g, f.asJSON, id, written)
		},
	}
	c.Flags().StringVar(&f.docker, "docker", "", "run the checks in this image (runtime: docker), pinned by digest (the local daemon's, else the registry's)")
	c.Flags().BoolVar(&f.workflow, "workflow", false, "sandboxed checks in pinned official images, and the GitHub workflows in .github/workflows/")
	c.Flags().StringVar(&f.action, "action", "", "with --workflow: pin the ProofGate action in the workflows to OWNER/REPO@<40-hex commit SHA> (default: a placeholder that doctor refuses)")
	c.Flags().StringVar(&f.registryMirror, "registry-mirror", starter.MirrorDefault(), "resolve Docker Hub images only through this registry mirror URL (env "+starter.MirrorEnv+")")
	c.Flags().StringVar(&f.keyDir, "key-dir", "", "directory for the signing key, outside the repository (default <user config dir>/proofgate/keys)")
	c.Flags().BoolVar(&f.noKey, "no-key", false, "generate no signing key (keyless signing, or a key you already have)")
	c.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
	return c
}

// planInit decides every file and refuses, before writing anything, when
// one of them exists.
func planInit(ctx context.Context, g *globals, f initFlags) (*initPlan, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, envErr(err)
	}
	root, err := source.Root(ctx, wd)
	if err != nil {
		return nil, usageErr(fmt.Errorf("run proofgate init inside a git repository (git init first): %w", err))
	}
	if wd, err = source.AbsReal(wd); err != nil {
		return nil, envErr(err)
	}
	p := &initPlan{root: root, wd: wd, repo: starter.OriginRepo(ctx, root)}
	if p.starter, err = starter.New(root, wd); err != nil {
		return nil, err
	}
	if err := checkImageFlag(f.docker); err != nil {
		return nil, err
	}
	if err := checkActionFlag(f.action, f.workflow); err != nil {
		return nil, err
	}
	if p.contractPath, err = filepath.Abs(g.contract); err != nil {
		return nil, envErr(err)
	}
	if f.workflow {
		p.branch = starter.DefaultBranch(ctx, root)
		if p.workflows, err = workflowFiles(root, p.branch.Name); err != nil {
			return nil, err
		}
		p.action = f.action
		if f.action != "" {
			for path, w := range p.workflows {
				p.workflows[path] = starter.PinAction(w, f.action)
			}
		}
	}

	if !f.noKey {
		if p.keyPath, err = keyPath(root, f.keyDir); err != nil {
			return nil, err
		}
	}
	if p.ignore, err = starter.IgnoreLines(ctx, root, g.state); err != nil {
		return nil, envErr(err)
	}
	if err := p.refuseExisting(); err != nil {
		return nil, err
	}
	if f.workflow || f.docker != "" {
		if err := p.starter.Pin(ctx, starter.PinOptions{Docker: f.docker, Mirror: f.registryMirror}); err != nil {
			return nil, err
		}
	}
	p.contract = p.starter.Contract()
	return p, nil
}

// targets are the files init creates, in the order it writes them.
func (p *initPlan) targets() []string {
	t := append([]string{p.contractPath}, p.workflowTargets()...)
	if p.keyPath == "" {
		return t
	}
	return append(t, p.keyPath, key.PublicPath(p.keyPath))
}

// workflowTargets are the workflow files among the targets.
func (p *initPlan) workflowTargets() []string {
	var t []string
	for _, name := range workflowNames {
		if w := filepath.Join(p.root, ".github", "workflows", name); p.workflows[w] != nil {
			t = append(t, w)
		}
	}
	return t
}

// refuseExisting names every target that already exists.
func (p *initPlan) refuseExisting() error {
	var there []string
	for _, t := range p.targets() {
		if _, err := os.Lstat(t); err == nil {
			there = append(there, p.show(t))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return envErr(err)
		}
	}
	if len(there) > 0 {
		verb := "exists"
		if len(there) > 1 {
			verb = "exist"
		}
		return usageErr(fmt.Errorf("init never overwrites, and %s already %s; nothing was written (move it away, or pass --contract FILE, --key-dir DIR or --no-key)", strings.Join(there, ", "), verb))
	}
	return nil
}

// write creates every file, exclusively, and appends the .gitignore lines.
func (p *initPlan) write() (keyID string, written []string, err error) {
	if err := os.MkdirAll(filepath.Dir(p.contractPath), 0o755); err != nil {
		return "", nil, envErr(err)
	}
	if err := durable.CreateExclusive(p.contractPath, p.contract, 0o644); err != nil {
		return "", nil, outputErr(err)
	}
	written = append(written, p.show(p.contractPath))
	for _, t := range p.workflowTargets() {
		if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
			return "", written, envErr(err)
		}
		if err := durable.CreateExclusive(t, p.workflows[t], 0o644); err != nil {
			return "", written, outputErr(err)
		}
		written = append(written, p.show(t))
	}
	if p.keyPath != "" {
		if err := os.MkdirAll(filepath.Dir(p.keyPath), 0o700); err != nil {
			return "", written, envErr(err)
		}
		if keyID, err = key.Generate(p.keyPath); err != nil {
			return "", written, outputErr(err)
		}
		written = append(written, p.keyPath, key.PublicPath(p.keyPath))
	}
	if len(p.ignore) > 0 {
		if err := appendLines(filepath.Join(p.root, ".gitignore"), p.ignore); err != nil {
			return keyID, written, envErr(err)
		}
		written = append(written, p.show(filepath.Join(p.root, ".gitignore")))
	}
	return keyID, written, nil
}

// show prints a path relative to the working directory when it is inside it.
func (p *initPlan) show(path string) string {
	if rel, err := source.RelLocal(p.wd, path); err == nil {
		return rel
	}
	return path
}

// checkImageFlag validates --docker.
func checkImageFlag(image string) error {
	if image == "" {
		return nil
	}
	if err := printable.Check("--docker", image); err != nil || strings.ContainsAny(image, " \t<>\"'") {
		return usageErr(fmt.Errorf("--docker %q: want an image reference such as golang:1.26 or golang:1.26@sha256:<64 hex> (see 'proofgate init --help')", image))
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return usageErr(fmt.Errorf("--docker %q: %w: want an image reference such as golang:1.26 or golang:1.26@sha256:<64 hex>", image, err))
	}
	return nil
}

// workflowNames are the example workflows --workflow writes.
var workflowNames = []string{"proofgate.yml", "release-gate.yml"}

func workflowFiles(root, branch string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range workflowNames {
		b, err := examples.Workflows.ReadFile("workflows/" + name)
		if err != nil {
			return nil, envErr(err)
		}
		if b, err = starter.OnBranch(b, branch); err != nil {
			return nil, envErr(fmt.Errorf("examples/workflows/%s: %w", name, err))
		}
		out[filepath.Join(root, ".github", "workflows", name)] = b
	}
	return out, nil
}

// keyPath is <dir>/<repo name>-<8 hex of the root path>.pem, refusing a
// directory inside the work tree: a private key there is one `git add -A`
// away from being published.
func keyPath(root, dir string) (string, error) {
	if dir == "" {
		cfg, err := os.UserConfigDir()
		if err != nil {
			return "", envErr(fmt.Errorf("no user config directory (%w); pass --key-dir DIR outside the repository", err))
		}
		dir = filepath.Join(cfg, "proofgate", "keys")
	}
	abs, err := source.AbsReal(dir)
	if err != nil {
		return "", envErr(err)
	}
	if _, err := source.RelLocal(root, abs); err == nil || abs == root {
		return "", usageErr(fmt.Errorf("the key directory %s is inside the work tree %s: a private key must never be in the repository; pass --key-dir DIR outside it", dir, root))
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(abs, starter.ContractName(root)+"-"+hex.EncodeToString(sum[:4])+".pem"), nil
}

// appendLines appends lines to a file, creating it, on a fresh line.
func appendLines(path string, lines []string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	text := "# proofgate: run state (proofgate init)\n" + strings.Join(lines, "\n") + "\n"
	if len(old) > 0 && old[len(old)-1] != '\n' {
		text = "\n" + text
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
