package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/source"
)

// resolveDefaults points the default --state and --contract at the
// repository's .proofgate when a command runs below the directory that
// holds it: the nearest directory from the working directory up to the
// repository root that has a .proofgate entry, else the root. In that
// directory itself, outside a repository, or for a flag given on the
// command line (relative to the working directory, as typed), nothing
// changes.
func (g *globals) resolveDefaults(ctx context.Context, changed func(flag string) bool) {
	stateSet, contractSet := changed("state"), changed("contract")
	g.stateGiven = stateSet
	if stateSet && contractSet {
		return
	}
	if _, err := os.Lstat(".proofgate"); err == nil {
		return
	}
	wd, err := os.Getwd()
	if err != nil {
		return
	}
	if wd, err = source.AbsReal(wd); err != nil {
		return
	}
	root, err := source.Root(ctx, wd)
	if err != nil {
		return
	}
	rel, err := filepath.Rel(wd, stateBase(wd, root))
	if err != nil || rel == "." {
		return
	}
	if !stateSet {
		g.state = filepath.Join(rel, ".proofgate")
	}
	if !contractSet {
		g.contract = filepath.Join(rel, ".proofgate", "contract.yaml")
	}
}

// stateBase returns the nearest directory from wd up to root holding a
// .proofgate entry, or root when none does.
func stateBase(wd, root string) string {
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := source.RelLocal(root, d); err != nil && d != root {
			return root // wd is not below root (git resolved another path)
		}
		if _, err := os.Lstat(filepath.Join(d, ".proofgate")); err == nil {
			return d
		}
		if d == root || filepath.Dir(d) == d {
			return root
		}
	}
}
