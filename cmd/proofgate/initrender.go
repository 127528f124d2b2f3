package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/imagepin"
	"github.com/proofgate/proofgate/internal/starter"
)

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
		next = append(next, "pin the action: replace "+starter.ActionPlaceholderOwner+"@"+starter.ActionPlaceholderSHA+" in "+
			strings.Join(add[len(add)-len(p.workflowTargets()):], " ")+" with OWNER/REPO@<full SHA> of the ProofGate release you reviewed (init --action does it; doctor fails until then)")
	}
	next = append(next, "proofgate contract check",
		"git add "+strings.Join(add, " ")+" && git commit -m 'ProofGate contract'", "proofgate run")
	var ci []string
	trustNote := ""
	if p.keyPath != "" {
		var add string
		add, trustNote = starter.TrustAddCommand(trustStore, pub, p.repo)
		ci = []string{
			"gh secret set PROOFGATE_SIGNING_KEY < " + shellQuote(p.keyPath),
			add,
			"git add " + shellQuote(trustStore) + " && git commit -m 'ProofGate trust store'",
		}
	} else {
		pub = ""
	}
	if asJSON {
		out := map[string]any{"files_written": written, "projects": p.starter.Kinds(), "runtime": p.starter.Runtime,
			"images": p.starter.Images(), "key_id": keyID, "private_key": p.keyPath, "public_key": pub,
			"gitignore_added": p.ignore, "next": next, "ci": ci}
		if len(p.workflows) > 0 {
			out["action"] = map[string]any{"pin": p.action, "placeholder": p.action == ""}
		}
		if p.branch.Name != "" {
			out["default_branch"] = map[string]string{"name": p.branch.Name, "from": p.branch.From}
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

// reportImages says which image each project runs in and where its
// digest came from; for a process contract, that it will not run in the
// Action.
func (p *initPlan) reportImages(g *globals) {
	if p.starter.Runtime != "docker" {
		fmt.Fprintln(g.stdout, "note: the checks run as plain processes on this machine (runtime: process); they will not run in the GitHub Action, whose container has no toolchains. `proofgate init --workflow` (or --docker IMAGE) writes sandboxed checks that do.")
		return
	}
	seen := map[string]bool{}
	for _, im := range p.starter.Images() {
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
	if p.branch.Name != "" {
		fmt.Fprintf(g.stdout, "workflows run on pushes to %s (%s)\n", esc(p.branch.Name), esc(p.branch.From))
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
