package main

import "github.com/spf13/cobra"

func contextCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "context", Short: "Resolve context snapshots from a provider"}
}
