package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/bundle/key"
)

// renderContract writes the starter contract as commented YAML.
func (p *initPlan) renderContract(image string) []byte {
	var b bytes.Buffer
	kinds := make([]string, len(p.projects))
	for i, pr := range p.projects {
		kinds[i] = pr.kind + " (" + pr.marker + ")"
	}
	fmt.Fprintf(&b, "# ProofGate contract written by `proofgate init` for: %s.\n", strings.Join(kinds, ", "))
	b.WriteString("# Every field: README \"The contract\" and docs/SPEC.md section 1.\n")
	b.WriteString("# Check it with `proofgate contract check`, commit it, then `proofgate run`.\n")
	fmt.Fprintf(&b, "version: 1\nname: %s\ndefaults:\n", strconv.Quote(contractName(p.root)))
	if p.runtime == "docker" {
		p.renderDocker(&b, image)
	} else {
		b.WriteString("  runtime: process    # unsandboxed, and recorded as such; `proofgate init --docker IMAGE` sandboxes\n")
		b.WriteString("  timeout: 10m\n  output_limit: 4MiB\n")
		b.WriteString("  # env is a check's whole environment. PATH and HOME come from the harness\n")
		b.WriteString("  # (env_from_host, ADR 0012; the attestation records a digest of each).\n")
		b.WriteString("  env_from_host: [PATH, HOME]\n")
	}
	b.WriteString("checks:\n")
	dir := ""
	if rel, err := relLocal(p.root, p.wd); err == nil && rel != "." {
		dir = rel
	}
	var crit []starterCheck
	for _, pr := range p.projects {
		for _, c := range pr.checks {
			renderCheck(&b, c, dir, pr, p.runtime)
			crit = append(crit, c)
		}
	}
	b.WriteString("criteria:\n")
	for _, c := range crit {
		fmt.Fprintf(&b, "  - {id: %s, text: %s}\n", c.criterion, strconv.Quote(c.text))
	}
	b.WriteString("approval: {required: 1}\nbudget: {max_duration: 30m}\n")
	return b.Bytes()
}

func (p *initPlan) renderDocker(b *bytes.Buffer, image string) {
	ref := image
	if p.placeholder != "" {
		name, _, _ := strings.Cut(p.placeholder, "@")
		ref = p.placeholder
		fmt.Fprintf(b, "  # Fill in the digest (contract check refuses the placeholder):\n")
		fmt.Fprintf(b, "  #   docker pull %s && docker inspect --format '{{index .RepoDigests 0}}' %s\n", name, name)
	}
	fmt.Fprintf(b, "  runtime: docker\n  image: %s\n", strconv.Quote(ref))
	b.WriteString("  pull: never         # the image must be present (docker pull it), or pull: missing\n")
	b.WriteString("  network: none       # dependencies must be vendored or already in the image\n")
	b.WriteString("  timeout: 10m\n  output_limit: 4MiB\n")
	b.WriteString("  tmpfs: 512MiB       # /tmp and $HOME each: room for build caches\n")
	b.WriteString("  resources: {memory: 2GiB, cpus: 2, pids: 512}\n")
}

func renderCheck(b *bytes.Buffer, c starterCheck, dir string, pr project, runtime string) {
	fmt.Fprintf(b, "  - id: %s\n", c.id)
	if dir != "" {
		fmt.Fprintf(b, "    dir: %s\n", strconv.Quote(dir))
	}
	q := make([]string, len(c.run))
	for i, a := range c.run {
		q[i] = strconv.Quote(a)
	}
	fmt.Fprintf(b, "    run: [%s]\n", strings.Join(q, ", "))
	if c.dependsOn != "" {
		fmt.Fprintf(b, "    depends_on: [%s]\n", c.dependsOn)
	}
	fmt.Fprintf(b, "    criteria: [%s]\n", c.criterion)
	if pr.kind == "go" {
		b.WriteString("    env: {GOFLAGS: -mod=readonly}\n")
	}
	if pr.copy && runtime == "docker" {
		b.WriteString("    workspace: copy    # it writes target/; the copy keeps writes off the host\n")
	}
}

// report prints what init wrote and the commands that finish the setup.
func (p *initPlan) report(g *globals, asJSON bool, keyID string, written []string) error {
	pub := key.PublicPath(p.keyPath)
	trustStore := p.show(filepath.Join(p.root, ".proofgate", "trust.json"))
	var next []string
	if p.placeholder != "" {
		name, _, _ := strings.Cut(p.placeholder, "@")
		next = append(next, "docker pull "+shellQuote(name)+" && docker inspect --format '{{index .RepoDigests 0}}' "+shellQuote(name)+
			"   # put that digest into "+p.show(p.contractPath))
	}
	add := []string{shellQuote(p.show(p.contractPath))}
	if len(p.ignore) > 0 {
		add = append(add, shellQuote(p.show(filepath.Join(p.root, ".gitignore"))))
	}
	for _, t := range p.workflowTargets() {
		add = append(add, shellQuote(p.show(t)))
	}
	next = append(next, "proofgate contract check",
		"git add "+strings.Join(add, " ")+" && git commit -m 'ProofGate contract'", "proofgate run")
	var ci []string
	if p.keyPath != "" {
		ci = []string{
			"gh secret set PROOFGATE_SIGNING_KEY < " + shellQuote(p.keyPath),
			"proofgate trust add --store " + shellQuote(trustStore) + " --public-key " + shellQuote(pub) + " --identity repo:" + p.repo,
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
		return writeJSONText(g.stdout, map[string]any{"files_written": written, "projects": kinds, "runtime": p.runtime,
			"image_placeholder": p.placeholder, "key_id": keyID, "private_key": p.keyPath, "public_key": pub,
			"gitignore_added": p.ignore, "next": next, "ci": ci})
	}
	for _, w := range written {
		fmt.Fprintln(g.stdout, "wrote", esc(w))
	}
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
	if p.repo == "OWNER/NAME" && len(ci) > 0 {
		fmt.Fprintln(g.stdout, "  (no GitHub origin remote: replace OWNER/NAME with the repository)")
	}
	return nil
}

// writeJSONText is writeJSON without HTML escaping: init prints shell
// commands (<, &&) that a user copies.
func writeJSONText(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
