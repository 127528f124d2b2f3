//go:build unix

package eventlog

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchDir holds the fixtures the segment benchmarks build once per
// process (removed by TestMain).
var (
	benchDir     string
	benchDirOnce sync.Once
	bench1M      = map[int]string{}
	bench1MMu    sync.Mutex
)

func benchTemp(tb testing.TB) string {
	benchDirOnce.Do(func() {
		d, err := os.MkdirTemp("", "pg-eventlog-bench-*")
		if err != nil {
			tb.Fatal(err)
		}
		benchDir = d
	})
	return benchDir
}

// benchEvents is the size of the big fixture: PG_BENCH_EVENTS, default
// 1 000 000.
func benchEvents() int {
	if n, err := strconv.Atoi(os.Getenv("PG_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// segmentedLog returns the active path of an n-event log sealed into
// about segs segments, built once per process: events staged and flushed
// 1000 at a time, the Log reopened every 20 000 (as writers come and go).
func segmentedLog(tb testing.TB, n, segs int) string {
	bench1MMu.Lock()
	defer bench1MMu.Unlock()
	key := n*1000 + segs
	if p, ok := bench1M[key]; ok {
		return p
	}
	dir := filepath.Join(benchTemp(tb), fmt.Sprintf("log-%d-%d", n, segs))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "events.ndjson")
	lineLen := len(benchLog(tb, 1))
	size := max(int64(n*lineLen/segs), 4096)
	old, had := os.LookupEnv(SegmentSizeEnv)
	os.Setenv(SegmentSizeEnv, strconv.FormatInt(size, 10))
	defer func() {
		if had {
			os.Setenv(SegmentSizeEnv, old)
		} else {
			os.Unsetenv(SegmentSizeEnv)
		}
	}()
	writeBenchChain(tb, path, n)
	syscall.Sync() // the fixture's writeback must not weigh on measured fsyncs
	bench1M[key] = path
	return path
}

func writeBenchChain(tb testing.TB, path string, n int) {
	l, err := Create(path, testBinding)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		data := map[string]any{
			"check": fmt.Sprintf("check-%d", i%17), "outcome": "passed", "exit_code": 0, "duration_ms": 1000 + i%977,
			"stdout":  map[string]any{"sha256": strings.Repeat("5f", 32), "size": 1024 + i, "truncated": false},
			"stderr":  map[string]any{"sha256": strings.Repeat("e3", 32), "size": 0, "truncated": false},
			"runtime": map[string]any{"provider": "process", "sandboxed": false},
		}
		if _, err := l.Stage("check.finished", data); err != nil {
			tb.Fatal(err)
		}
		if i%1000 == 0 || i == n {
			if err := l.Flush(); err != nil {
				tb.Fatal(err)
			}
		}
		if i%20_000 == 0 && i < n {
			l.Close()
			if l, err = Open(path); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
}

// sha256Files is the baseline: read and hash the same bytes, file by file.
func sha256Files(tb testing.TB, files []string) int64 {
	var total int64
	buf := make([]byte, 1<<20)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			tb.Fatal(err)
		}
		h := sha256.New()
		k, err := io.CopyBuffer(h, f, buf)
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
		total += k
		h.Sum(nil)
	}
	return total
}

// BenchmarkVerifySegments1M verifies a 1 000 000-event log sealed into 100
// segments by path (VerifyPath, as 'events verify' does) and reports its
// CPU time against the CPU time of the sha256sum command over the same
// files (and, for reference, of hashing them in this process), measured
// interleaved; the figure the README gives is x-sha256sum.
func BenchmarkVerifySegments1M(b *testing.B) {
	n := benchEvents()
	path := segmentedLog(b, n, 100)
	files, err := Files(path)
	if err != nil {
		b.Fatal(err)
	}
	var vs, ss, cs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		s, err := VerifyPath(path, &testBinding)
		c1 := cpuTime()
		if err != nil || s.Len != n {
			b.Fatal(s, err)
		}
		size := sha256Files(b, files)
		c2 := cpuTime()
		vs, ss = append(vs, c1-c0), append(ss, c2-c1)
		cs = append(cs, sha256sumCPU(b, files))
		b.SetBytes(size)
	}
	b.StopTimer()
	v, s, c := median(vs), median(ss), median(cs)
	b.ReportMetric(float64(len(files)-1), "segments")
	b.ReportMetric(float64(v)/1e6, "verify-cpu-ms")
	b.ReportMetric(float64(c)/1e6, "sha256sum-cpu-ms")
	b.ReportMetric(float64(v)/float64(c), "x-sha256sum")
	b.ReportMetric(float64(v)/float64(s), "x-go-sha256")
}

// sha256sumCPU runs sha256sum over files and returns its CPU time.
func sha256sumCPU(tb testing.TB, files []string) time.Duration {
	cmd := exec.Command("sha256sum", files...)
	if err := cmd.Run(); err != nil {
		tb.Fatal(err)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkVerifySingle1M verifies the same bytes as one file (the
// segments concatenated, as a bundle holds them): against
// BenchmarkVerifySegments1M it is the cost of segmenting.
func BenchmarkVerifySingle1M(b *testing.B) {
	n := benchEvents()
	path := segmentedLog(b, n, 100)
	one := filepath.Join(filepath.Dir(path), "..", fmt.Sprintf("single-%d.ndjson", n))
	if _, err := os.Stat(one); err != nil {
		rc, err := OpenChain(path)
		if err != nil {
			b.Fatal(err)
		}
		f, _ := os.Create(one)
		io.Copy(f, rc)
		rc.Close()
		f.Close()
	}
	var vs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0 := cpuTime()
		s, err := VerifyPath(one, &testBinding)
		if err != nil || s.Len != n {
			b.Fatal(s, err)
		}
		vs = append(vs, cpuTime()-c0)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(vs))/1e6, "verify-cpu-ms")
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkAppendLatency1Mvs1k opens a log, appends one event (fsynced)
// and closes it, as a CLI-like writer does, alternately on a 1 000-event
// log and on a 1 000 000-event log in 100 segments, 30 rounds per
// iteration, and reports the median latency of each and their ratio (and
// of Open alone).
func BenchmarkAppendLatency1Mvs1k(b *testing.B) {
	big := segmentedLog(b, benchEvents(), 100)
	small := segmentedLog(b, 1000, 1)
	once := func(path string) time.Duration {
		t0 := time.Now()
		l, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append("check.finished", map[string]any{"check": "unit", "outcome": "passed", "exit_code": 0}); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	opened := func(path string) time.Duration {
		t0 := time.Now()
		l, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		l.Close()
		return d
	}
	var bs, ss, bo, so []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for range 30 { // 30 interleaved rounds per iteration: medians of many
			bs = append(bs, once(big))
			ss = append(ss, once(small))
			bo = append(bo, opened(big))
			so = append(so, opened(small))
		}
	}
	b.StopTimer()
	bm, sm := median(bs), median(ss)
	b.ReportMetric(float64(bm.Microseconds()), "1M-us")
	b.ReportMetric(float64(sm.Microseconds()), "1k-us")
	b.ReportMetric(float64(median(bo).Microseconds()), "1M-open-us")
	b.ReportMetric(float64(median(so).Microseconds()), "1k-open-us")
	b.ReportMetric(float64(bm)/float64(sm), "x-1k")
}
