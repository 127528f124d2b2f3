package main

import "github.com/spf13/cobra"

// addActionCommands registers the GitHub Action entrypoints.
func addActionCommands(root *cobra.Command, g *globals) {}
