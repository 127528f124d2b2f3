package session_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/proofgate/proofgate/kernel/session"
)

// BenchmarkGovernedCall is one governed tool call: gate, input blob,
// receipts (requested, decided, started, finished) under two lock holds,
// the process runtime running the helper, both streams stored as blobs.
// Each call has distinct arguments (a new input and a new stdout blob).
func BenchmarkGovernedCall(b *testing.B) {
	f := newFixture(b)
	s, err := session.Start(ctx, f.opts("agent-1"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(fmt.Sprintf(`{"name":"n%d"}`, i))})
		if err != nil || res.Result != "success" {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// BenchmarkDirectExec runs the same argv with os/exec, capturing both
// streams: the baseline.
func BenchmarkDirectExec(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		var out, errb bytes.Buffer
		cmd := exec.Command(helper, "hello", fmt.Sprintf("n%d", i))
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// syncRE matches the start of one traced sync call (an interrupted call's
// "<... fsync resumed>" line does not match: it is the same call).
var syncRE = regexp.MustCompile(`(?m)^\d+ +(fsync|fdatasync|sync_file_range|syncfs)\(`)

// fsyncs counts fsync(2)/fdatasync(2) calls of a child recorder making n
// calls, traced with strace.
func (f *fixture) fsyncs(t *testing.T, strace string, n int) int {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "strace.out")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync,sync_file_range,syncfs", "-o", trace, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PG_SESSION_CHILD=calls", "PG_STATE="+f.state, "PG_RUN="+f.id, "PG_REPO="+f.repo, fmt.Sprintf("PG_CALLS=%d", n))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("traced child: %v\n%s", err, out)
	}
	if p := os.Getenv("PG_KEEP_STRACE"); p != "" {
		defer exec.Command("cp", trace, fmt.Sprintf("%s.%d", p, n)).Run()
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	return len(syncRE.FindAll(b, -1))
}

// The fsyncs one governed call costs, measured (strace) as the difference
// between a session of 11 calls and one of 1, over 10. Today (per call):
// 6 for the run's writer lock (temp file and directory on acquire, the
// directory on release, two lock holds: the tool runs unlocked), 4 event
// appends (requested, decided, started, finished), 2 projection rewrites
// (one per hold), 4 for two new blobs (input, stdout: file and directory)
// and 2 for the process runtime's process record.
func TestFsyncsPerCall(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed: the fsync count is measured with it")
	}
	one := newFixture(t).fsyncs(t, strace, 1)
	eleven := newFixture(t).fsyncs(t, strace, 11)
	per := float64(eleven-one) / 10
	t.Logf("fsyncs: session of 1 call %d, of 11 calls %d: %.1f per call", one, eleven, per)
	if per > 21 {
		t.Fatalf("%.1f fsyncs per call", per)
	}
}

// BenchmarkFsync is one small write and fsync in the state's file system:
// the unit the governed call's fsync count is priced in.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "f"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write([]byte("0123456789abcdef\n")); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
