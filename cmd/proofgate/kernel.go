package main

import "github.com/spf13/cobra"

// addKernelCommands registers the run lifecycle verbs.
func addKernelCommands(root *cobra.Command, g *globals) {}
