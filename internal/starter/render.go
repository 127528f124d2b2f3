package starter

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/internal/imagepin"
)

// renderContract writes the starter contract as commented YAML.
func (p *Starter) Contract() []byte {
	var b bytes.Buffer
	kinds := make([]string, len(p.Projects))
	for i, pr := range p.Projects {
		kinds[i] = pr.kind + " (" + pr.marker + ")"
	}
	fmt.Fprintf(&b, "# ProofGate contract written by `proofgate init` for: %s.\n", strings.Join(kinds, ", "))
	b.WriteString("# Every field: docs/cli.md \"The contract\" and docs/SPEC.md section 1.\n")
	b.WriteString("# Check it with `proofgate contract check`, commit it, then `proofgate run`.\n")
	if p.Runtime == "docker" {
		p.renderSandboxed(&b)
		return b.Bytes()
	}
	b.WriteString("# These checks run as plain processes on this machine: they will not run\n")
	b.WriteString("# in the GitHub Action, whose container has no toolchains. `proofgate init\n")
	b.WriteString("# --workflow` (or --docker IMAGE) writes sandboxed checks that do.\n")
	fmt.Fprintf(&b, "version: 1\nname: %s\ndefaults:\n", strconv.Quote(ContractName(p.Root)))
	b.WriteString("  runtime: process    # unsandboxed, and recorded as such; `proofgate init --docker IMAGE` sandboxes\n")
	b.WriteString("  timeout: 10m\n  output_limit: 4MiB\n")
	b.WriteString("  # env is a check's whole environment. PATH and HOME come from the harness\n")
	b.WriteString("  # (env_from_host, ADR 0012; the attestation records a digest of each).\n")
	b.WriteString("  env_from_host: [PATH, HOME]\n")
	b.WriteString("checks:\n")
	var crit []starterCheck
	for _, pr := range p.Projects {
		for _, c := range pr.checks {
			renderCheck(&b, c, p.dir())
			crit = append(crit, c)
		}
	}
	renderTail(&b, crit)
	return b.Bytes()
}

// dir is the working directory relative to the repository root, "" at it.
func (p *Starter) dir() string {
	if rel, ok := relLocal(p.Root, p.Dir); ok && rel != "." {
		return filepath.ToSlash(rel)
	}
	return ""
}

func renderTail(b *bytes.Buffer, crit []starterCheck) {
	b.WriteString("criteria:\n")
	for _, c := range crit {
		fmt.Fprintf(b, "  - {id: %s, text: %s}\n", c.criterion, strconv.Quote(c.text))
	}
	b.WriteString("approval: {required: 1}\nbudget: {max_duration: 30m}\n")
}

// renderSandboxed writes the docker contract: each project's official
// image (or --docker's) pinned by digest, a fetch check with the network
// filling a dependency cache, offline checks reading it (ADR 0030).
func (p *Starter) renderSandboxed(b *bytes.Buffer) {
	b.WriteString("#\n# Sandboxed: every check runs in Docker with network none and a copy of\n")
	b.WriteString("# the workspace, except the one that fetches dependencies (network: host),\n")
	b.WriteString("# which fills a cache the others mount read-only. Each image is pinned by\n")
	b.WriteString("# the digest init resolved; re-pin with `proofgate init --docker IMAGE`\n")
	b.WriteString("# in a scratch checkout, or let Renovate or Dependabot keep it current.\n")
	b.WriteString("# Between jobs on GitHub, caches persist with actions/cache:\n")
	b.WriteString("# examples/workflows/proofgate-caches.yml.\n")
	shapes := make([]dockerShape, len(p.Projects))
	var caches []cacheDecl
	env := [][2]string{{"HOME", "/home/sandbox"}}
	for i, pr := range p.Projects {
		shapes[i] = pr.sandboxed(p.dir())
		caches = append(caches, shapes[i].caches...)
		env = appendEnv(env, shapes[i].env...)
	}
	fmt.Fprintf(b, "version: 1\nname: %s\n", strconv.Quote(ContractName(p.Root)))
	if len(caches) > 0 {
		b.WriteString("caches:\n")
		for _, c := range caches {
			if c.lifetime != "" {
				fmt.Fprintf(b, "  %s: {mount: %s, lifetime: %s}\n", c.name, c.mount, c.lifetime)
			} else {
				fmt.Fprintf(b, "  %s: {mount: %s}\n", c.name, c.mount)
			}
		}
	}
	image := p.Projects[0].pin
	fmt.Fprintf(b, "defaults:\n  runtime: docker\n  # %s\n  image: %s\n", pinComment(image, p.Projects[0].tool), strconv.Quote(image.Ref))
	b.WriteString("  pull: missing       # run pulls the pinned image when the daemon lacks it\n")
	b.WriteString("  network: none       # only the check that fetches dependencies has the network\n")
	b.WriteString("  workspace: copy     # checks write into a copy, never into the checkout\n")
	b.WriteString("  timeout: 15m\n  output_limit: 4MiB\n")
	b.WriteString("  tmpfs: 1GiB         # /tmp and /home/sandbox each\n")
	b.WriteString("  resources: {memory: 4GiB, cpus: 2, pids: 1024}\n")
	b.WriteString("  env:\n")
	for _, kv := range env {
		fmt.Fprintf(b, "    %s: %s\n", kv[0], strconv.Quote(kv[1]))
	}
	b.WriteString("checks:\n")
	var crit []starterCheck
	for i, s := range shapes {
		for _, c := range s.checks {
			if pin := p.Projects[i].pin; pin.Ref != image.Ref {
				c.image = pin.Ref
			}
			renderCheck(b, c, p.dir())
			crit = append(crit, c)
		}
	}
	renderTail(b, crit)
}

// pinComment says which image a pin is and where its digest came from.
func pinComment(p imagepin.Pin, t toolImage) string {
	from := "--docker"
	if t.from != "" {
		from = t.from
	}
	switch p.Source {
	case imagepin.SourceLocal:
		return fmt.Sprintf("%s (%s), pinned by the local daemon's repo digest", p.Image, from)
	case imagepin.SourceLocalID:
		return fmt.Sprintf("%s (%s): a local image without a repo digest, pinned by its image ID (this daemon only)", p.Image, from)
	case "":
		return fmt.Sprintf("%s (%s)", p.Image, from)
	}
	return fmt.Sprintf("%s (%s), pinned by the digest %s gave", p.Image, from, p.Registry)
}

// appendEnv adds key/value pairs whose key is not there yet.
func appendEnv(env [][2]string, kvs ...[2]string) [][2]string {
	for _, kv := range kvs {
		if !slices.ContainsFunc(env, func(e [2]string) bool { return e[0] == kv[0] }) {
			env = append(env, kv)
		}
	}
	return env
}

func renderCheck(b *bytes.Buffer, c starterCheck, dir string) {
	fmt.Fprintf(b, "  - id: %s\n", c.id)
	if dir != "" {
		fmt.Fprintf(b, "    dir: %s\n", strconv.Quote(dir))
	}
	if c.image != "" {
		fmt.Fprintf(b, "    image: %s\n", strconv.Quote(c.image))
	}
	if c.network != "" {
		fmt.Fprintf(b, "    network: %s\n", c.network)
	}
	deps := append(slices.Clone(c.after), c.dependsOn)
	if c.dependsOn == "" {
		deps = deps[:len(deps)-1]
	}
	if len(deps) > 0 {
		fmt.Fprintf(b, "    depends_on: [%s]\n", strings.Join(deps, ", "))
	}
	if len(c.caches) > 0 {
		fmt.Fprintf(b, "    caches: [%s]\n", strings.Join(c.caches, ", "))
	}
	q := make([]string, len(c.run))
	for i, a := range c.run {
		q[i] = strconv.Quote(a)
	}
	fmt.Fprintf(b, "    run: [%s]\n", strings.Join(q, ", "))
	if len(c.env) > 0 {
		kv := make([]string, len(c.env))
		for i, e := range c.env {
			kv[i] = e[0] + ": " + strconv.Quote(e[1])
		}
		fmt.Fprintf(b, "    env: {%s}\n", strings.Join(kv, ", "))
	}
	fmt.Fprintf(b, "    criteria: [%s]\n", c.criterion)
}

// Image is one image of --json's images.
type Image struct {
	Project string `json:"project"`
	From    string `json:"chosen_from"`
	imagepin.Pin
	Note string `json:"note,omitempty"`
}

// images are the pinned images, one per project (empty for a process
// contract).
func (p *Starter) Images() []Image {
	out := []Image{}
	if p.Runtime != "docker" {
		return out
	}
	for _, pr := range p.Projects {
		out = append(out, Image{Project: pr.kind, From: pr.tool.from, Pin: pr.pin, Note: pr.tool.note})
	}
	return out
}
