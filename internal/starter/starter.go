// Package starter is what `proofgate init` decides before it writes: the
// projects in a directory (go.mod, package.json, pyproject.toml or
// setup.py, Cargo.toml), the official image each one's checks run in,
// pinned by digest (a registry's, or the local daemon's), the starter
// contract as commented YAML, and the example workflows' branch filter and
// action pin. It writes nothing; internal/app's Init refuses an existing
// file and writes. Its errors carry their exit class: a manifest init
// cannot read is usage, a registry it cannot reach the environment's.
package starter

import (
	"path/filepath"

	"github.com/proofgate/proofgate/kernel/exit"
)

// Starter is a starter contract being decided.
type Starter struct {
	Root, Dir string    // the repository root and the directory init runs in (absolute, symlinks resolved)
	Runtime   string    // "process", or "docker" once Pin has pinned an image per project
	Projects  []Project // Detect's, in the order found
}

// New detects the projects in dir, a directory of the repository at
// root, for a process contract (Pin makes it a docker one).
func New(root, dir string) (*Starter, error) {
	prs, err := Detect(dir)
	if err != nil {
		return nil, err
	}
	return &Starter{Root: root, Dir: dir, Runtime: "process", Projects: prs}, nil
}

// Kinds are the projects' kinds (go, node, python, rust), in order.
func (p *Starter) Kinds() []string {
	out := make([]string, len(p.Projects))
	for i, pr := range p.Projects {
		out[i] = pr.kind
	}
	return out
}

func usage(err error) error       { return exit.Wrap(exit.Usage, err) }
func environment(err error) error { return exit.Wrap(exit.Environment, err) }

// relLocal returns p relative to root when it lies inside it.
func relLocal(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
