package contract

import (
	"slices"

	"github.com/proofgate/proofgate/internal/pathglob"
)

// setProduces sets c's produces: globs (ADR 0039), each a valid path glob,
// sorted. A docker check that produces files needs a copy-mode workspace:
// a read-only one cannot be written, and without one there is nothing to
// read back.
func (p *parser) setProduces(c *Check, globs []string, at fieldPath) error {
	if len(globs) == 0 {
		return nil
	}
	for i, g := range globs {
		if err := pathglob.Valid(g); err != nil {
			return p.errf(at.key("produces").idx(i), "%v", err)
		}
	}
	if c.Runtime == "docker" && c.Workspace != "copy" {
		return p.errf(at.key("produces"), "the check's workspace is %q: a docker check that produces files needs workspace: copy (a read-only workspace cannot be written)", c.Workspace)
	}
	c.Produces = slices.Sorted(slices.Values(globs))
	return nil
}
