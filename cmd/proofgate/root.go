package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/spf13/cobra"
)

// Exit codes (README.md), one per class of kernel/exit.
const (
	exitOK       = exit.OK
	exitRefused  = int(exit.Refused)     // a check failed or a verification was refused
	exitUsage    = int(exit.Usage)       // bad usage or invalid input
	exitAwaiting = int(exit.Awaiting)    // awaiting approval
	exitEnv      = int(exit.Environment) // environment error: no Docker, no network, unwritable state
)

func usageErr(err error) error   { return exit.Wrap(exit.Usage, err) }
func refusedErr(err error) error { return exit.Wrap(exit.Refused, err) }
func envErr(err error) error     { return exit.Wrap(exit.Environment, err) }

// silent is a failure of class c that the command already reported (for
// example with --json): only the exit code matters.
func silent(c exit.Class) error { return exit.Reported(c) }

// globals are the flags every command shares.
type globals struct {
	state    string
	contract string
	// stateGiven is set when --state was on the command line (paths.go).
	stateGiven bool
	stdout     io.Writer
	stderr     io.Writer
}

// Main runs the CLI and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	out := &watchedWriter{w: stdout}
	g := &globals{stdout: out, stderr: stderr}
	root := newRoot(g, out, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	// A command classifies what it returns (usageErr, refusedErr, envErr,
	// classify); anything else came from cobra.
	// With --json the message is also a JSON document on stdout, unless the
	// command already printed its own (hints.go).
	asJSON := wantsJSON(cmd, args) && !out.wrote
	var ce *exit.Error
	if errors.As(err, &ce) {
		if ce.Err != nil {
			msg := ce.Err.Error()
			if ce.Class == exit.Usage {
				msg = usageHint(cmd, msg)
			}
			reportError(stdout, stderr, asJSON, msg, ce.Class.Code())
		}
		return ce.Class.Code()
	}
	// cobra's own errors (unknown command, wrong arg count) are usage errors.
	path := "proofgate"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	reportError(stdout, stderr, asJSON, fmt.Sprintf("%s (see '%s --help')", err.Error(), path), exitUsage)
	return exitUsage
}

// newRoot is the command tree, writing to out and stderr.
func newRoot(g *globals, out, stderr io.Writer) *cobra.Command {
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
	root.SetOut(out)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.state, "state", ".proofgate", "state directory holding runs/")
	root.PersistentFlags().StringVar(&g.contract, "contract", ".proofgate/contract.yaml", "contract file")
	root.PersistentPreRun = func(c *cobra.Command, _ []string) { g.resolveDefaults(c.Context(), c.Flags().Changed) }
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})

	addKernelCommands(root, g)
	addBundleCommands(root, g)
	addActionCommands(root, g)
	addInitCommands(root, g)
	addAgentCommands(root, g)
	addEvidenceCommands(root, g)
	addHistoryCommands(root, g)
	addCleanCommands(root, g)
	setVersionFlag(root)

	return root
}

// addKernelCommands registers the run lifecycle verbs.
func addKernelCommands(root *cobra.Command, g *globals) {
	root.AddCommand(contractCmd(g), planCmd(g), runCmd(g), execCmd(g), mergeCmd(g), statusCmd(g), auditAlias(g),
		listCmd(g), outputCmd(g), approveCmd(g), rejectCmd(g), cancelCmd(g), retryCmd(g), versionCmd(g))
	ev := eventsCmd(root)
	ev.AddCommand(eventsVerifyCmd(g), eventsUnlockCmd(g))
}

// repoDir returns the repository root containing the working directory.
func repoDir(ctx context.Context) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", envErr(err)
	}
	root, err := source.Root(ctx, wd)
	if err != nil {
		return "", usageErr(fmt.Errorf("run proofgate inside a git repository: %w", err))
	}
	return root, nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
