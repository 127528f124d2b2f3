package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/imagepin"
)

// renderContract writes the starter contract as commented YAML.
func (p *initPlan) renderContract() []byte {
	var b bytes.Buffer
	kinds := make([]string, len(p.projects))
	for i, pr := range p.projects {
		kinds[i] = pr.kind + " (" + pr.marker + ")"
	}
	fmt.Fprintf(&b, "# ProofGate contract written by `proofgate init` for: %s.\n", strings.Join(kinds, ", "))
	b.WriteString("# Every field: docs/cli.md \"The contract\" and docs/SPEC.md section 1.\n")
	b.WriteString("# Check it with `proofgate contract check`, commit it, then `proofgate run`.\n")
	if p.runtime == "docker" {
		p.renderSandboxed(&b)
		return b.Bytes()
	}
	b.WriteString("# These checks run as plain processes on this machine: they will not run\n")
	b.WriteString("# in the GitHub Action, whose container has no toolchains. `proofgate init\n")
	b.WriteString("# --workflow` (or --docker IMAGE) writes sandboxed checks that do.\n")
	fmt.Fprintf(&b, "version: 1\nname: %s\ndefaults:\n", strconv.Quote(contractName(p.root)))
	b.WriteString("  runtime: process    # unsandboxed, and recorded as such; `proofgate init --docker IMAGE` sandboxes\n")
	b.WriteString("  timeout: 10m\n  output_limit: 4MiB\n")
	b.WriteString("  # env is a check's whole environment. PATH and HOME come from the harness\n")
	b.WriteString("  # (env_from_host, ADR 0012; the attestation records a digest of each).\n")
	b.WriteString("  env_from_host: [PATH, HOME]\n")
	b.WriteString("checks:\n")
	var crit []starterCheck
	for _, pr := range p.projects {
		for _, c := range pr.checks {
			renderCheck(&b, c, p.dir())
			crit = append(crit, c)
		}
	}
	renderTail(&b, crit)
	return b.Bytes()
}

// dir is the working directory relative to the repository root, "" at it.
func (p *initPlan) dir() string {
	if rel, err := relLocal(p.root, p.wd); err == nil && rel != "." {
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
func (p *initPlan) renderSandboxed(b *bytes.Buffer) {
	b.WriteString("#\n# Sandboxed: every check runs in Docker with network none and a copy of\n")
	b.WriteString("# the workspace, except the one that fetches dependencies (network: host),\n")
	b.WriteString("# which fills a cache the others mount read-only. Each image is pinned by\n")
	b.WriteString("# the digest init resolved; re-pin with `proofgate init --docker IMAGE`\n")
	b.WriteString("# in a scratch checkout, or let Renovate or Dependabot keep it current.\n")
	b.WriteString("# Between jobs on GitHub, caches persist with actions/cache:\n")
	b.WriteString("# examples/workflows/proofgate-caches.yml.\n")
	shapes := make([]dockerShape, len(p.projects))
	var caches []cacheDecl
	env := [][2]string{{"HOME", "/home/sandbox"}}
	for i, pr := range p.projects {
		shapes[i] = pr.sandboxed(p.dir())
		caches = append(caches, shapes[i].caches...)
		env = appendEnv(env, shapes[i].env...)
	}
	fmt.Fprintf(b, "version: 1\nname: %s\n", strconv.Quote(contractName(p.root)))
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
	image := p.projects[0].pin
	fmt.Fprintf(b, "defaults:\n  runtime: docker\n  # %s\n  image: %s\n", pinComment(image, p.projects[0].tool), strconv.Quote(image.Ref))
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
			if pin := p.projects[i].pin; pin.Ref != image.Ref {
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

// report prints what init wrote and the commands that finish the setup.
func (p *initPlan) report(g *globals, asJSON bool, keyID string, written []string) error {
	pub := key.PublicPath(p.keyPath)
	trustStore := p.show(filepath.Join(p.root, ".proofgate", "trust.json"))
	var next []string
	add := []string{shellQuote(p.show(p.contractPath))}
	if len(p.ignore) > 0 {
		add = append(add, shellQuote(p.show(filepath.Join(p.root, ".gitignore"))))
	}
	for _, t := range p.workflowTargets() {
		add = append(add, shellQuote(p.show(t)))
	}
	if len(p.workflows) > 0 && p.action == "" {
		next = append(next, "pin the action: replace "+actionPlaceholderOwner+"@"+actionPlaceholderSHA+" in "+
			strings.Join(add[len(add)-len(p.workflowTargets()):], " ")+" with OWNER/REPO@<full SHA> of the ProofGate release you reviewed (init --action does it; doctor fails until then)")
	}
	next = append(next, "proofgate contract check",
		"git add "+strings.Join(add, " ")+" && git commit -m 'ProofGate contract'", "proofgate run")
	var ci []string
	trustNote := ""
	if p.keyPath != "" {
		var add string
		add, trustNote = trustAddCommand(trustStore, pub, p.repo)
		ci = []string{
			"gh secret set PROOFGATE_SIGNING_KEY < " + shellQuote(p.keyPath),
			add,
			"git add " + shellQuote(trustStore) + " && git commit -m 'ProofGate trust store'",
		}
	} else {
		pub = ""
	}
	if asJSON {
		kinds := make([]string, len(p.projects))
		for i, pr := range p.projects {
			kinds[i] = pr.kind
		}
		out := map[string]any{"files_written": written, "projects": kinds, "runtime": p.runtime,
			"images": p.images(), "key_id": keyID, "private_key": p.keyPath, "public_key": pub,
			"gitignore_added": p.ignore, "next": next, "ci": ci}
		if len(p.workflows) > 0 {
			out["action"] = map[string]any{"pin": p.action, "placeholder": p.action == ""}
		}
		if p.branch.name != "" {
			out["default_branch"] = map[string]string{"name": p.branch.name, "from": p.branch.from}
		}
		return writeJSONText(g.stdout, out)
	}
	for _, w := range written {
		fmt.Fprintln(g.stdout, "wrote", esc(w))
	}
	p.reportImages(g)
	if keyID != "" {
		fmt.Fprintf(g.stdout, "signing key %s: private key outside the repository (0600); never commit it\n", keyID)
	}
	fmt.Fprintln(g.stdout, "\nnext:")
	for _, n := range next {
		fmt.Fprintln(g.stdout, "  "+esc(n))
	}
	if len(ci) > 0 {
		fmt.Fprintln(g.stdout, "\nto sign bundles in GitHub Actions:")
	}
	for _, n := range ci {
		fmt.Fprintln(g.stdout, "  "+esc(n))
	}
	if trustNote != "" {
		fmt.Fprintln(g.stdout, "  "+esc(trustNote))
	}
	return nil
}

// initImage is one image of --json's images.
type initImage struct {
	Project string `json:"project"`
	From    string `json:"chosen_from"`
	imagepin.Pin
	Note string `json:"note,omitempty"`
}

// images are the pinned images, one per project (empty for a process
// contract).
func (p *initPlan) images() []initImage {
	out := []initImage{}
	if p.runtime != "docker" {
		return out
	}
	for _, pr := range p.projects {
		out = append(out, initImage{Project: pr.kind, From: pr.tool.from, Pin: pr.pin, Note: pr.tool.note})
	}
	return out
}

// reportImages says which image each project runs in and where its
// digest came from; for a process contract, that it will not run in the
// Action.
func (p *initPlan) reportImages(g *globals) {
	if p.runtime != "docker" {
		fmt.Fprintln(g.stdout, "note: the checks run as plain processes on this machine (runtime: process); they will not run in the GitHub Action, whose container has no toolchains. `proofgate init --workflow` (or --docker IMAGE) writes sandboxed checks that do.")
		return
	}
	seen := map[string]bool{}
	for _, im := range p.images() {
		if seen[im.Ref] {
			continue
		}
		seen[im.Ref] = true
		where := im.Source
		switch im.Source {
		case imagepin.SourceRegistry, imagepin.SourceMirror:
			where = im.Source + " " + im.Registry
		case imagepin.SourceLocalID:
			where = "the local daemon's image ID: this image exists on this daemon only; push it and run init again to pin a registry digest"
		case imagepin.SourceLocal:
			where = "the local daemon's repo digest"
		}
		fmt.Fprintf(g.stdout, "image %s (%s): %s\n", esc(im.Ref), esc(im.From), esc(where))
		if im.Note != "" {
			fmt.Fprintf(g.stdout, "  note: %s\n", esc(im.Note))
		}
	}
	if p.branch.name != "" {
		fmt.Fprintf(g.stdout, "workflows run on pushes to %s (%s)\n", esc(p.branch.name), esc(p.branch.from))
	}
}

// writeJSONText is writeJSON without HTML escaping: init prints shell
// commands (<, &&) that a user copies.
func writeJSONText(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
