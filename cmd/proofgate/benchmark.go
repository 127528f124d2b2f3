package main

import "github.com/spf13/cobra"

func benchmarkCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "benchmark", Short: "Benchmarks over run history"}
}
