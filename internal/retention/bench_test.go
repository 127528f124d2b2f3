//go:build unix

package retention_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// cloneRuns writes n copies of the COMPLETE run tmpl into state: each a
// real chain re-written under its own id (the same events, contract and
// blobs, hard-linked), with its projection, so that every one audits.
func cloneRuns(tb testing.TB, state, tmplDir string, n int) {
	tb.Helper()
	events, err := run.ReadLog(tmplDir)
	if err != nil {
		tb.Fatal(err)
	}
	frozen, err := os.ReadFile(filepath.Join(tmplDir, run.ContractFile))
	if err != nil {
		tb.Fatal(err)
	}
	c, _, err := replay.ReadContract(os.DirFS(tmplDir))
	if err != nil {
		tb.Fatal(err)
	}
	blobs, _ := filepath.Glob(filepath.Join(tmplDir, "blobs", "sha256", "*"))
	base := time.Now()
	for i := range n {
		id := run.NewID(base.Add(time.Duration(i) * time.Millisecond))
		dir := filepath.Join(state, "runs", id)
		if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
			tb.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, run.ContractFile), frozen, 0o444)
		for _, b := range blobs {
			if err := os.Link(b, filepath.Join(dir, "blobs", "sha256", filepath.Base(b))); err != nil {
				tb.Fatal(err)
			}
		}
		lg, err := eventlog.Create(filepath.Join(dir, run.EventsFile), eventlog.Binding{Run: id, Source: events[0].Source, Contract: canon.SumBytes(frozen)})
		if err != nil {
			tb.Fatal(err)
		}
		// The verification digest names the run: recompute it, and the
		// approval that binds to it.
		fold := replay.NewFolder(c)
		var digest string
		for j, e := range events {
			data := e.Data
			switch e.Type {
			case "verification.completed":
				if digest, err = fold.CurrentDigest(); err != nil {
					tb.Fatal(err)
				}
				data = setField(tb, data, "digest", digest)
			case "approval.recorded":
				data = setField(tb, data, "verification_digest", digest)
			}
			ev, err := lg.Stage(e.Type, data)
			if err != nil {
				tb.Fatal(err)
			}
			if err := fold.Apply(j+1, ev); err != nil {
				tb.Fatal(err)
			}
		}
		if err := lg.Flush(); err != nil {
			tb.Fatal(err)
		}
		evs := lg.Events()
		lg.Close()
		rep, err := replay.Fold(c, evs)
		if err != nil {
			tb.Fatal(err)
		}
		b, _ := json.MarshalIndent(rep, "", "  ")
		os.WriteFile(filepath.Join(dir, run.RunFile), append(b, '\n'), 0o644)
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func setField(tb testing.TB, raw json.RawMessage, k, v string) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatal(err)
	}
	m[k], _ = json.Marshal(v)
	b, _ := json.Marshal(m)
	return b
}

// BenchmarkPruneDryRun plans a prune (every run audited, every blob
// listed) over 1 000 and 10 000 generated COMPLETE runs: the time per run
// stays flat (linear in runs).
func BenchmarkPruneDryRun(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			fx := newFixture(b)
			tmpl := fx.complete()
			state := filepath.Join(b.TempDir(), "state")
			cloneRuns(b, state, fx.dir(tmpl), n)
			s, _ := retention.Resolve(nil, retention.Inputs{})
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				p, err := retention.Scan(state, s, later())
				if err != nil || len(p.Archive) != n {
					b.Fatalf("%v: %d to archive", err, len(p.Archive))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/run")
			// CPU time per run: what the machine's other load does not skew.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N)/float64(n), "cpu-µs/run")
		})
	}
}
