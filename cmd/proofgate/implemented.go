package main

import (
	"github.com/spf13/cobra"
)

// registerImplementedBy adds --implemented-by to plan and run: the new run
// verifies the tree an agent left in implementation run RUN (ADR 0017).
func registerImplementedBy(c *cobra.Command, p *planFlags) {
	if c.Name() != "plan" && c.Name() != "run" {
		return
	}
	c.Flags().StringVar(&p.implementedBy, "implemented-by", "",
		"verify the work of implementation run RUN (IMPLEMENTING, every session ended, the same contract): "+
			"the new run binds the current tree (the agent's commit; a dirty tree needs --allow-dirty), records RUN's "+
			"chain head in run.planned's implemented_by, and RUN becomes SUPERSEDED by it")
}
