package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/proofgate/proofgate/kernel/printable"
	"github.com/spf13/cobra"
)

// Exit codes (DESIGN.md "CLI").
const (
	exitOK       = 0
	exitRefused  = 1 // a check failed or a verification was refused
	exitUsage    = 2 // bad usage or invalid input
	exitAwaiting = 3 // awaiting approval
	exitEnv      = 4 // environment error: no Docker, no network, unwritable state
)

// exitError carries an exit code through cobra. A nil err means the command
// already reported (for example with --json) and only the code matters.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error   { return &exitError{exitUsage, err} }
func refusedErr(err error) error { return &exitError{exitRefused, err} }
func envErr(err error) error     { return &exitError{exitEnv, err} }
func silent(code int) error      { return &exitError{code: code} }

// globals are the flags every command shares.
type globals struct {
	state    string
	contract string
	stdout   io.Writer
	stderr   io.Writer
}

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "proofgate",
		Short: "Make a CI run prove what it did",
		Long: `ProofGate runs the checks a repository declares in its contract
(.proofgate/contract.yaml), records every fact in a hash-chained event log,
waits for a human approval and exports a signed evidence bundle that a
release gate verifies offline.

Exit codes: 0 success, 1 a check failed or a verification was refused,
2 bad usage or invalid input, 3 awaiting approval, 4 environment error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.PersistentFlags().StringVar(&g.state, "state", ".proofgate", "state directory holding runs/")
	root.PersistentFlags().StringVar(&g.contract, "contract", ".proofgate/contract.yaml", "contract file")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})

	addKernelCommands(root, g)
	addBundleCommands(root, g)
	addActionCommands(root, g)

	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "proofgate:", printable.Escape(ee.err.Error()))
		}
		return ee.code
	}
	// cobra's own errors (unknown command, wrong arg count) are usage errors.
	path := "proofgate"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "proofgate: %s (see '%s --help')\n", printable.Escape(err.Error()), path)
	return exitUsage
}
