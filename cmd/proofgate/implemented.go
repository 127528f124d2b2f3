package main

import (
	"fmt"
	"io"

	"github.com/proofgate/proofgate/bundle"
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

// printImplementedBy names, under an accepted verdict, the implementation
// run a successor's bundle carries.
func printImplementedBy(w io.Writer, v *bundle.Verdict) {
	ib := v.ImplementedBy
	if ib == nil {
		return
	}
	fmt.Fprintf(w, "implemented by: run %s (%d events ending %s): %d session(s), %d tool call(s), replayed and bound to this run\n",
		esc(ib.Run), ib.Length, esc(ib.Head), ib.Sessions, ib.ToolCalls)
}
