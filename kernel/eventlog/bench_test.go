package eventlog

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchLog builds an n-event log in memory with data shaped like
// check.finished evidence.
func benchLog(tb testing.TB, n int) []byte {
	tb.Helper()
	var out bytes.Buffer
	prev := ""
	for i := 1; i <= n; i++ {
		data, err := canonicalData(map[string]any{
			"check":       fmt.Sprintf("check-%d", i%17),
			"outcome":     "passed",
			"exit_code":   0,
			"duration_ms": 1000 + i%977,
			"stdout":      map[string]any{"sha256": strings.Repeat("5f", 32), "size": 1024 + i, "truncated": false},
			"stderr":      map[string]any{"sha256": strings.Repeat("e3", 32), "size": 0, "truncated": false},
			"runtime":     map[string]any{"provider": "process", "sandboxed": false},
		})
		if err != nil {
			tb.Fatal(err)
		}
		tm := formatTime(time.Date(2026, 11, 29, 21, 0, 0, i*1000+1, time.UTC))
		line, hash := buildLine(nil, &testBinding, uint64(i), "check.finished", tm, data, prev)
		out.Write(line)
		out.WriteByte('\n')
		prev = hash
	}
	return out.Bytes()
}

func BenchmarkAppend(b *testing.B) {
	path := filepath.Join(b.TempDir(), "events.ndjson")
	l, err := Create(path, testBinding)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	data := map[string]any{"check": "unit", "outcome": "passed", "exit_code": 0, "duration_ms": 1234}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append("check.finished", data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

var (
	bench100k     []byte
	bench100kOnce = func() func(testing.TB) []byte {
		return func(tb testing.TB) []byte {
			if bench100k == nil {
				bench100k = benchLog(tb, 100_000)
				if p := os.Getenv("PG_BENCH_WRITE"); p != "" {
					os.WriteFile(p, bench100k, 0o644)
				}
			}
			return bench100k
		}
	}()
)

// BenchmarkVerify100k verifies a 100,000-event log and reports the ratio
// to SHA-256 over the same bytes, measured in the same process.
func BenchmarkVerify100k(b *testing.B) {
	raw := bench100kOnce(b)
	shaBest := time.Duration(1 << 62)
	for i := 0; i < 5; i++ {
		start := time.Now()
		sha256.Sum256(raw)
		shaBest = min(shaBest, time.Since(start))
	}
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Verify(bytes.NewReader(raw), &testBinding)
		if err != nil || s.Len != 100_000 {
			b.Fatal(s, err)
		}
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "verify-ms")
	b.ReportMetric(float64(shaBest.Microseconds())/1000, "sha256-ms")
	b.ReportMetric(float64(per)/float64(shaBest), "x-sha256")
}

// BenchmarkVerifyFile100k verifies the 100k log from a real file, as the
// CLI does, and reports CPU time per verify (steadier than wall time on a
// shared machine). PG_BENCH_WRITE=path also leaves the file for sha256sum.
func BenchmarkVerifyFile100k(b *testing.B) {
	raw := bench100kOnce(b)
	path := filepath.Join(b.TempDir(), "events.ndjson")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		s, err := Verify(f, &testBinding)
		f.Close()
		if err != nil || s.Len != 100_000 {
			b.Fatal(s, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0)/time.Duration(b.N))/1e6, "cpu-ms")
}

func BenchmarkSHA256100k(b *testing.B) {
	raw := bench100kOnce(b)
	b.SetBytes(int64(len(raw)))
	for i := 0; i < b.N; i++ {
		sha256.Sum256(raw)
	}
}
