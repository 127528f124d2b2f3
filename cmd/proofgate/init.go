package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/starter"
)

// addInitCommands registers init and doctor.
func addInitCommands(root *cobra.Command, g *globals) {
	root.AddCommand(initCmd(g), doctorCmd(g))
}

func initCmd(g *globals) *cobra.Command {
	var (
		o      app.InitOptions
		asJSON bool
	)
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
			o.Contract, o.State = g.contract, g.state
			in, err := app.Init(cmd.Context(), o)
			if fe := (*app.InitFileError)(nil); errors.As(err, &fe) {
				return initFileErr(fe)
			} else if err != nil {
				return err
			}
			return reportInit(g, asJSON, in)
		},
	}
	c.Flags().StringVar(&o.Docker, "docker", "", "run the checks in this image (runtime: docker), pinned by digest (the local daemon's, else the registry's)")
	c.Flags().BoolVar(&o.Workflow, "workflow", false, "sandboxed checks in pinned official images, and the GitHub workflows in .github/workflows/")
	c.Flags().StringVar(&o.Action, "action", "", "with --workflow: pin the ProofGate action in the workflows to OWNER/REPO@<40-hex commit SHA> (default: a placeholder that doctor refuses)")
	c.Flags().StringVar(&o.Mirror, "registry-mirror", starter.MirrorDefault(), "resolve Docker Hub images only through this registry mirror URL (env "+starter.MirrorEnv+")")
	c.Flags().StringVar(&o.KeyDir, "key-dir", "", "directory for the signing key, outside the repository (default <user config dir>/proofgate/keys)")
	c.Flags().BoolVar(&o.NoKey, "no-key", false, "generate no signing key (keyless signing, or a key you already have)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// initFileErr words a file init could not create. One that exists
// appeared while init was writing (the plan refused every existing
// target): init never overwrites, and says what it wrote before.
func initFileErr(fe *app.InitFileError) error {
	if !errors.Is(fe.Err, fs.ErrExist) {
		return envErr(fe.Err)
	}
	written := "nothing"
	if len(fe.Written) > 0 {
		written = strings.Join(fe.Written, ", ")
	}
	return usageErr(fmt.Errorf("%w: it appeared while init was writing, and init never overwrites; written before it: %s", fe.Err, written))
}
