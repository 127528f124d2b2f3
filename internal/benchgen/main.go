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

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

func main() {
	state := flag.String("state", "", "state directory to create the run in")
	n := flag.Int("events", 100000, "number of events")
	segs := flag.Int("segments", 0, "seal the log into about this many segments (0: one file)")
	flag.Parse()
	if *state == "" {
		fmt.Fprintln(os.Stderr, "benchgen: -state is required")
		os.Exit(2)
	}
	if err := gen(*state, *n, *segs); err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func gen(state string, n, segs int) error {
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
	// measure appends (BenchmarkAppend in kernel/eventlog does). Events are
	// staged and flushed 1000 at a time, and the log reopened every 20 000
	// so that the writer's memory stays bounded; with -segments the seal
	// threshold is set from the first batch's bytes per event.
	p := filepath.Join(dir, run.EventsFile)
	lg, err := eventlog.Create(p, b)
	if err != nil {
		return err
	}
	data := map[string]any{"check": "a", "outcome": "passed", "exit_code": 0, "duration_ms": 12,
		"stdout": map[string]any{"digest": "sha256:" + strings.Repeat("c", 64), "size": 1234}}
	for i := 1; i <= n; i++ {
		if _, err := lg.Stage("bench.event", data); err != nil {
			return err
		}
		if i%1000 != 0 && i != n {
			continue
		}
		if err := lg.Flush(); err != nil {
			return err
		}
		if (i == 1000 && segs > 0) || (i%20_000 == 0 && i < n) {
			if i == 1000 && segs > 0 {
				fi, err := os.Stat(p)
				if err != nil {
					return err
				}
				os.Setenv(eventlog.SegmentSizeEnv, fmt.Sprint(max(fi.Size()/1000*int64(n)/int64(segs), 1024)))
			}
			if err := lg.Close(); err != nil {
				return err
			}
			if lg, err = eventlog.Open(p); err != nil {
				return err
			}
		}
	}
	if err := lg.Close(); err != nil {
		return err
	}
	fmt.Println(id)
	return nil
}
