package main

import (
	"context"

	"github.com/proofgate/proofgate/internal/starter"
	"github.com/spf13/cobra"
)

// The repository a CLI run records: --repo OWNER/NAME, else the GitHub
// origin remote, else nothing (internal/starter's repo.go, ADR 0033).

func registerRepo(c *cobra.Command, p *planFlags) {
	c.Flags().StringVar(&p.repo, "repo", "",
		"record the run as made for repository OWNER/NAME (default: the GitHub origin remote; none without one); "+
			"a trust store key with --identity repo:OWNER/NAME verifies only bundles of that repository")
}

// runRepo is the repository a run planned in root records: flag when
// given (validated), else OWNER/NAME of root's GitHub origin remote,
// else "".
func runRepo(ctx context.Context, root, flag string) (string, error) {
	if flag != "" {
		if err := starter.CheckRepo("--repo", flag); err != nil {
			return "", usageErr(err)
		}
		return flag, nil
	}
	return starter.LocalRepo(ctx, root), nil
}
