package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/imagepin"
)

// reportInit prints what init wrote and the commands that finish the setup.
func reportInit(g *globals, asJSON bool, in *app.Initialized) error {
	if asJSON {
		out := map[string]any{"files_written": in.Written, "projects": in.Starter.Kinds(), "runtime": in.Starter.Runtime,
			"images": in.Starter.Images(), "key_id": in.KeyID, "private_key": in.PrivateKey, "public_key": in.PublicKey,
			"gitignore_added": in.Ignored, "next": in.Next, "ci": in.CI}
		if in.Workflows {
			out["action"] = map[string]any{"pin": in.Action, "placeholder": in.Action == ""}
		}
		if in.Branch.Name != "" {
			out["default_branch"] = map[string]string{"name": in.Branch.Name, "from": in.Branch.From}
		}
		return writeJSONText(g.stdout, out)
	}
	for _, w := range in.Written {
		fmt.Fprintln(g.stdout, "wrote", esc(w))
	}
	reportImages(g, in)
	if in.KeyID != "" {
		fmt.Fprintf(g.stdout, "signing key %s: private key outside the repository (0600); never commit it\n", in.KeyID)
	}
	fmt.Fprintln(g.stdout, "\nnext:")
	for _, n := range in.Next {
		fmt.Fprintln(g.stdout, "  "+esc(n))
	}
	if len(in.CI) > 0 {
		fmt.Fprintln(g.stdout, "\nto sign bundles in GitHub Actions:")
	}
	for _, n := range in.CI {
		fmt.Fprintln(g.stdout, "  "+esc(n))
	}
	if in.TrustNote != "" {
		fmt.Fprintln(g.stdout, "  "+esc(in.TrustNote))
	}
	return nil
}

// reportImages says which image each project runs in and where its
// digest came from; for a process contract, that it will not run in the
// Action.
func reportImages(g *globals, in *app.Initialized) {
	if in.Starter.Runtime != "docker" {
		fmt.Fprintln(g.stdout, "note: the checks run as plain processes on this machine (runtime: process); they will not run in the GitHub Action, whose container has no toolchains. `proofgate init --workflow` (or --docker IMAGE) writes sandboxed checks that do.")
		return
	}
	seen := map[string]bool{}
	for _, im := range in.Starter.Images() {
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
	if in.Branch.Name != "" {
		fmt.Fprintf(g.stdout, "workflows run on pushes to %s (%s)\n", esc(in.Branch.Name), esc(in.Branch.From))
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
