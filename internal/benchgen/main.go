// Command benchgen writes a run directory holding a long event log, for
// scripts/bench.sh to time 'proofgate events verify' against sha256sum over
// the same file. The log is a real chain written through kernel/eventlog.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/kernel/canon"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/run"
)

func main() {
	state := flag.String("state", "", "state directory to create the run in")
	n := flag.Int("events", 100000, "number of events")
	flag.Parse()
	if *state == "" {
		fmt.Fprintln(os.Stderr, "benchgen: -state is required")
		os.Exit(2)
	}
	if err := gen(*state, *n); err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func gen(state string, n int) error {
	c, err := contract.Parse("bench.yaml", []byte("version: 1\nname: bench\ndefaults: {runtime: process}\nchecks:\n  - {id: a, run: ['true']}\n"), "")
	if err != nil {
		return err
	}
	frozen, err := c.Canonical()
	if err != nil {
		return err
	}
	id := run.NewID(time.Now())
	dir := filepath.Join(state, "runs", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, run.ContractFile), frozen, 0o444); err != nil {
		return err
	}
	b := eventlog.Binding{Run: id, Source: eventlog.Source{Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40)}, Contract: canon.SumBytes(frozen)}
	// Write without a per-event fsync: this builds a fixture, it does not
	// measure appends (BenchmarkAppend in kernel/eventlog does).
	lg, err := eventlog.Create(filepath.Join(dir, run.EventsFile), b)
	if err != nil {
		return err
	}
	defer lg.Close()
	data := map[string]any{"check": "a", "outcome": "passed", "exit_code": 0, "duration_ms": 12,
		"stdout": map[string]any{"digest": "sha256:" + strings.Repeat("c", 64), "size": 1234}}
	for i := 0; i < n; i++ {
		if _, err := lg.Append("bench.event", data); err != nil {
			return err
		}
	}
	fmt.Println(id)
	return nil
}
