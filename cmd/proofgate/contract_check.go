package main

import (
	"fmt"

	"github.com/proofgate/proofgate/kernel/contract"
)

// printContractCheck reports a valid contract: its hash on stdout, and each
// warning (an image not pinned by digest) on stderr, or with --json in a
// "warnings" array. Warnings never change the exit code.
func printContractCheck(g *globals, r *contract.Resolved, hash string, asJSON bool) error {
	ws := r.Warnings(g.contract)
	if asJSON {
		ids := make([]string, len(r.Checks))
		for i, c := range r.Checks {
			ids[i] = c.ID
		}
		if ws == nil {
			ws = []contract.Warning{}
		}
		return writeJSON(g.stdout, map[string]any{"valid": true, "contract_hash": hash, "name": r.Name,
			"profile": r.Profile, "checks": ids, "warnings": ws})
	}
	for _, w := range ws {
		fmt.Fprintln(g.stderr, "warning:", esc(w.String()))
	}
	fmt.Fprintf(g.stdout, "%s: valid (%d checks)\ncontract_hash %s\n", g.contract, len(r.Checks), hash)
	return nil
}
