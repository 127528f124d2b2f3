package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/kernel/contract"
)

func contractCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "contract", Short: "Work with the contract"}
	var profile string
	var asJSON bool
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the contract and print its hash",
		Long: `Validate the contract (--contract, default .proofgate/contract.yaml) against
the published JSON Schema and the semantic rules, resolve --profile, and print
the contract hash: sha256 of the RFC 8785 canonical JSON of the resolved
contract. Exit 0 valid, 2 invalid (the error names the file and field).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := contract.Load(g.contract, profile)
			if err != nil {
				return usageErr(contractLoadErr(err))
			}
			h, err := r.Hash()
			if err != nil {
				return usageErr(err)
			}
			return printContractCheck(g, r, h, asJSON)
		},
	}
	check.Flags().StringVar(&profile, "profile", "", "resolve this profile")
	check.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddCommand(check)
	return c
}

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
