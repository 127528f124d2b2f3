package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/spf13/cobra"
)

// addBundleCommands registers keygen, trust, bundle and events checkpoint.
func addBundleCommands(root *cobra.Command, g *globals) {
	root.AddCommand(keygenCmd(g), trustCmd(g), bundleCmd(g), vsaCmd(g))
	eventsCmd(root).AddCommand(checkpointCmd(g))
}

// checkOutput refuses an output path inside the run store, where a named
// file could replace a run's evidence (bundle export -o once replaced a
// run's events.ndjson).
func (g *globals) checkOutput(flag, path string) error {
	if store := run.NewStore(g.state); store.Holds(path) {
		return usageErr(fmt.Errorf("%s %s: inside the run store %s, which only proofgate writes; choose a path outside it", flag, path, store.Dir))
	}
	return nil
}

// preflightOutput checks an output path before the work that fills it:
// outside the run store, and no existing file unless force.
func (g *globals) preflightOutput(flag, path string, force bool) error {
	if err := g.checkOutput(flag, path); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil && !force {
		return outputErr(fmt.Errorf("%s: %w", path, fs.ErrExist))
	}
	return nil
}

// writeOutput writes b to path (mode 0644, durably): a new file, or with
// force one that replaces what is there.
func writeOutput(path string, b []byte, force bool) error {
	if force {
		return durable.WriteFile(path, b, 0o644)
	}
	return durable.CreateExclusive(path, b, 0o644)
}

// outputErr classifies a failed write of a file the user named: an
// existing file is a usage error that says how to replace it.
func outputErr(err error) error {
	if errors.Is(err, fs.ErrExist) {
		return usageErr(fmt.Errorf("%w (pass --force to replace it)", err))
	}
	return envErr(err)
}

// parseTime accepts RFC 3339 or "now".
func parseTime(flag, v string) (time.Time, error) {
	if v == "now" {
		return time.Now().UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, usageErr(fmt.Errorf("--%s: %q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z) or now", flag, v))
	}
	return t.UTC(), nil
}

func optTime(flag, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := parseTime(flag, v)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

func bundleCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "bundle", Short: "Export and verify signed evidence bundles"}
	c.AddCommand(exportCmd(g), verifyBundleCmd(g), agentSessionCmd(g))
	return c
}
