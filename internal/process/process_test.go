//go:build unix

package process_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// helper is the path of the compiled testdata/helper fixture.
var helper string

func TestMain(m *testing.M) {
	if dir := os.Getenv("PG_PROCESS_HARNESS"); dir != "" {
		harness(dir)
		return
	}
	dir, err := os.MkdirTemp("", "process-helper-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helper = filepath.Join(dir, "helper")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	build := exec.Command(gobin, "build", "-o", helper, "./testdata/helper")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building helper:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	runtime.Result
	stdout, stderr *bytes.Buffer
	out, err       *runtime.Capture
	elapsed        time.Duration
}

func run(t testing.TB, ctx context.Context, spec runtime.Spec, limit int64) result {
	t.Helper()
	return runOn(t, process.New(), ctx, spec, limit)
}

func runOn(t testing.TB, rt *process.Runtime, ctx context.Context, spec runtime.Spec, limit int64) result {
	t.Helper()
	if spec.Workspace == "" {
		spec.Workspace = t.TempDir()
	}
	var ob, eb bytes.Buffer
	o, e := runtime.NewCapture(&ob, limit), runtime.NewCapture(&eb, limit)
	start := time.Now()
	res := rt.Run(ctx, spec, o, e)
	el := time.Since(start)
	if !res.Outcome.Valid() {
		t.Fatalf("invalid outcome %q", res.Outcome)
	}
	if res.Started.IsZero() || res.Finished.Before(res.Started) {
		t.Fatalf("timestamps: started %v finished %v", res.Started, res.Finished)
	}
	if res.Started.Location() != time.UTC || res.Finished.Location() != time.UTC {
		t.Fatalf("timestamps not UTC: %v %v", res.Started, res.Finished)
	}
	if strings.ContainsAny(res.Detail, "\n\r") {
		t.Fatalf("detail not one line: %q", res.Detail)
	}
	return result{res, &ob, &eb, o, e, el}
}

func want(t *testing.T, r result, o runtime.Outcome, code int) {
	t.Helper()
	if r.Outcome != o || r.ExitCode != code {
		t.Fatalf("outcome %s exit %d, want %s exit %d (detail %q, stderr %q)", r.Outcome, r.ExitCode, o, code, r.Detail, r.stderr)
	}
}

// gone waits briefly for pid to die: the kernel delivers SIGKILL
// asynchronously to a process that is not our child.
func gone(pid int) bool {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if !lock.Running(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// killStray kills pid if it still is one of this test's helper or sleep
// processes (never a process that reused the pid).
func killStray(pid int) {
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && (bytes.HasPrefix(cmd, []byte(helper+"\x00")) || bytes.HasPrefix(cmd, []byte("sleep\x001000"))) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func firstPid(t *testing.T, b *bytes.Buffer) int {
	t.Helper()
	line, _, _ := strings.Cut(b.String(), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		t.Fatalf("no child pid in stdout %q", b.String())
	}
	return pid
}

func TestArgvShellMetacharactersArriveLiterally(t *testing.T) {
	ws := t.TempDir()
	// A file a shell glob would expand to.
	if err := os.WriteFile(filepath.Join(ws, "glob-target"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"$(id)", ";", "|", "*", "`id`", "a b", "'q'", `"dq"`, "&&", ">", "out.txt",
		"~", "$HOME", "", `\`, "x;rm -rf /", "$((1+1))", "\ttab", "line\nbreak", "ü"}
	r := run(t, context.Background(), runtime.Spec{Argv: append([]string{helper, "argv"}, args...), Workspace: ws}, 0)
	want(t, r, runtime.Passed, 0)
	var got []string
	if err := json.Unmarshal(r.stdout.Bytes(), &got); err != nil {
		t.Fatalf("helper output %q: %v", r.stdout, err)
	}
	if !slices.Equal(got, args) {
		t.Fatalf("argv changed:\n got %q\nwant %q", got, args)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("a redirection was interpreted")
	}
}

func TestEnvironmentIsExactlyDeclared(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_must_not_leak")
	t.Setenv("ACTIONS_RUNTIME_TOKEN", "must_not_leak")
	t.Setenv("PATH", os.Getenv("PATH")+":/harness/only")
	env := map[string]string{"Z": "last", "A": "1", "PATH": "/usr/bin:/bin", "WEIRD": "a=b c;$(id)", "EMPTY": ""}
	r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "env"}, Env: env}, 0)
	want(t, r, runtime.Passed, 0)
	var got []string
	if err := json.Unmarshal(r.stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	wantEnv := []string{"A=1", "EMPTY=", "PATH=/usr/bin:/bin", "WEIRD=a=b c;$(id)", "Z=last"}
	if !slices.Equal(got, wantEnv) {
		t.Fatalf("env:\n got %q\nwant %q", got, wantEnv)
	}
	if strings.Contains(r.stdout.String(), "leak") {
		t.Fatal("harness environment leaked")
	}

	// No env at all: the check sees an empty environment.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{helper, "env"}}, 0)
	want(t, r, runtime.Passed, 0)
	if s := strings.TrimSpace(r.stdout.String()); s != "[]" {
		t.Fatalf("empty env: got %s", s)
	}
}

func TestInvalidEnvRefused(t *testing.T) {
	for _, env := range []map[string]string{{"": "x"}, {"A=B": "x"}, {"A": "x\x00y"}, {"A\x00": "x"}} {
		r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "env"}, Env: env}, 0)
		want(t, r, runtime.Error, -1)
		if !strings.Contains(r.Detail, "env") {
			t.Errorf("detail %q does not name env", r.Detail)
		}
	}
}

func TestPathLookup(t *testing.T) {
	bin := t.TempDir()
	if err := os.Symlink(helper, filepath.Join(bin, "pg-helper")); err != nil {
		t.Fatal(err)
	}
	// Bare name found through the declared PATH.
	r := run(t, context.Background(), runtime.Spec{Argv: []string{"pg-helper", "argv", "ok"}, Env: map[string]string{"PATH": "/nonexistent:" + bin}}, 0)
	want(t, r, runtime.Passed, 0)
	if p := r.Attestation.Profile["path"]; p != "/nonexistent:"+bin {
		t.Fatalf("profile path %v", p)
	}
	// The harness PATH is never used: with the default PATH the name is not found.
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"pg-helper", "argv"}}, 0)
	want(t, r, runtime.Error, -1)
	if !strings.Contains(r.Detail, `"pg-helper"`) || !strings.Contains(r.Detail, process.DefaultPath) {
		t.Fatalf("detail %q", r.Detail)
	}
	if p := r.Attestation.Profile["path"]; p != process.DefaultPath {
		t.Fatalf("profile path %v", p)
	}
	// A bare name in the default PATH works.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"sh", "-c", "exit 7"}}, 0)
	want(t, r, runtime.Failed, 7)
	// Relative PATH entries resolve against the working directory, like execvp.
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, "tools"), 0o755)
	if err := os.Symlink(helper, filepath.Join(ws, "tools", "pg-helper")); err != nil {
		t.Fatal(err)
	}
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"pg-helper", "pwd"}, Env: map[string]string{"PATH": "tools"}, Workspace: ws}, 0)
	want(t, r, runtime.Passed, 0)
	// A relative argv[0] with a slash resolves against the working directory.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"./tools/pg-helper", "pwd"}, Workspace: ws}, 0)
	want(t, r, runtime.Passed, 0)
}

func TestCouldNotStart(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "noexec"), []byte("#!/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "badformat"), []byte("\x00\x01garbage"), 0o755)
	cases := []struct {
		argv []string
		name string
	}{
		{[]string{"/nonexistent/frobnicate"}, "/nonexistent/frobnicate"},
		{[]string{"frobnicate-xyz-not-here"}, "frobnicate-xyz-not-here"},
		{[]string{"./noexec"}, "./noexec"},
		{[]string{ws}, ws},
		{[]string{"./badformat"}, "./badformat"},
		{[]string{}, "argv"},
		{[]string{""}, "argv"},
		{[]string{helper, "a\x00b"}, "argv[1]"},
	}
	for _, c := range cases {
		r := run(t, context.Background(), runtime.Spec{Argv: c.argv, Workspace: ws}, 0)
		want(t, r, runtime.Error, -1)
		t.Logf("argv %q: %s", c.argv, r.Detail)
		if !strings.Contains(r.Detail, c.name) {
			t.Errorf("argv %q: detail %q does not name %q", c.argv, r.Detail, c.name)
		}
		if r.Attestation.Provider != "process" {
			t.Errorf("error result without attestation: %+v", r.Attestation)
		}
	}
}

func TestWorkingDirectory(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "sub", "deep"), 0o755)
	os.WriteFile(filepath.Join(ws, "file"), nil, 0o644)
	os.Symlink(outside, filepath.Join(ws, "escape"))
	os.Symlink("sub", filepath.Join(ws, "inside"))

	r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "pwd"}, Workspace: ws, Dir: "sub/deep"}, 0)
	want(t, r, runtime.Passed, 0)
	if got := strings.TrimSpace(r.stdout.String()); got != filepath.Join(ws, "sub", "deep") {
		t.Fatalf("pwd %q", got)
	}
	r = run(t, context.Background(), runtime.Spec{Argv: []string{helper, "pwd"}, Workspace: ws, Dir: "inside"}, 0)
	want(t, r, runtime.Passed, 0)

	os.Mkdir(filepath.Join(outside, "sub"), 0o755)
	for dir, why := range map[string]string{
		"..": "escapes", "../x": "escapes", "/etc": "escapes", "/": "escapes", "sub/../../x": "escapes",
		"escape": "outside the workspace", "escape/sub": "outside the workspace",
		"missing": "no such file", "file": "not a directory",
	} {
		r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "pwd"}, Workspace: ws, Dir: dir}, 0)
		want(t, r, runtime.Error, -1)
		t.Logf("dir %q: %s", dir, r.Detail)
		if !strings.Contains(r.Detail, why) {
			t.Errorf("dir %q: detail %q does not say %q", dir, r.Detail, why)
		}
		if r.stdout.Len() != 0 {
			t.Errorf("dir %q: the check ran: %q", dir, r.stdout)
		}
	}
	for _, w := range []string{"relative/ws", "."} {
		r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "pwd"}, Workspace: w}, 0)
		want(t, r, runtime.Error, -1)
		if !strings.Contains(r.Detail, "workspace") {
			t.Errorf("detail %q", r.Detail)
		}
	}
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		argv []string
		o    runtime.Outcome
		code int
	}{
		{[]string{helper, "exit", "0"}, runtime.Passed, 0},
		{[]string{helper, "exit", "1"}, runtime.Failed, 1},
		{[]string{helper, "exit", "42"}, runtime.Failed, 42},
		{[]string{helper, "exit", "255"}, runtime.Failed, 255},
		{[]string{helper, "selfkill"}, runtime.Failed, 128 + 9},
		{[]string{"/bin/sh", "-c", "kill -TERM $$"}, runtime.Failed, 128 + 15},
	} {
		r := run(t, context.Background(), runtime.Spec{Argv: c.argv}, 0)
		want(t, r, c.o, c.code)
	}
	r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "exit", "3"}}, 0)
	if r.stdout.String() != "out\n" || r.stderr.String() != "err\n" {
		t.Fatalf("streams mixed: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

func TestOutputFloodIsCapped(t *testing.T) {
	for _, stream := range []string{"stdout", "stderr"} {
		t.Run(stream, func(t *testing.T) {
			const limit = 1 << 20
			r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "flood", stream, strconv.Itoa(100 << 20)}, Timeout: time.Minute}, limit)
			want(t, r, runtime.OutputLimit, 128+9)
			c, buf := r.out, r.stdout
			if stream == "stderr" {
				c, buf = r.err, r.stderr
			}
			st := c.Stream()
			if st.Size != limit || !st.Truncated || buf.Len() != limit {
				t.Fatalf("kept %d (buffer %d) truncated %v", st.Size, buf.Len(), st.Truncated)
			}
			sum := sha256.Sum256(bytes.Repeat([]byte("x"), limit))
			if st.Digest != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Fatalf("digest %s", st.Digest)
			}
			if !strings.Contains(r.Detail, stream) {
				t.Fatalf("detail %q", r.Detail)
			}
			if r.elapsed > 5*time.Second {
				t.Fatalf("took %v", r.elapsed)
			}
		})
	}
	// Exactly the cap is not an overflow.
	r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "flood", "stdout", "4096"}}, 4096)
	want(t, r, runtime.Passed, 0)
	if st := r.out.Stream(); st.Truncated || st.Size != 4096 {
		t.Fatalf("at cap: %+v", st)
	}
	// One byte more is, even when the check exits 0 on its own.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{helper, "flood", "stdout", "4097"}}, 4096)
	if r.Outcome != runtime.OutputLimit || r.out.Stream().Size != 4096 {
		t.Fatalf("one over: %s %+v", r.Outcome, r.out.Stream())
	}
}

func TestTimeoutKillsGroupIgnoringSIGTERM(t *testing.T) {
	for name, argv := range map[string][]string{
		"helper": {helper, "spawn-ignoring"},
		"sh":     {"/bin/sh", "-c", `trap "" TERM; sleep 1000 & echo $!; wait`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := run(t, context.Background(), runtime.Spec{Argv: argv, Timeout: time.Second}, 0)
			pid := firstPid(t, r.stdout)
			t.Cleanup(func() { killStray(pid) })
			if r.Outcome != runtime.Timeout {
				t.Fatalf("outcome %s detail %q", r.Outcome, r.Detail)
			}
			if r.elapsed > 4*time.Second || r.elapsed < time.Second {
				t.Fatalf("took %v", r.elapsed)
			}
			if !gone(pid) {
				t.Fatalf("child %d survived the timeout", pid)
			}
		})
	}
}

func TestGrandchildHoldingPipe(t *testing.T) {
	t.Run("in-group", func(t *testing.T) {
		r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "orphan"}}, 0)
		pid := firstPid(t, r.stdout)
		t.Cleanup(func() { killStray(pid) })
		want(t, r, runtime.Passed, 0)
		// The pipes closed by themselves once the group was killed: Run did
		// not have to give up on them after its drain bound.
		if strings.Contains(r.Detail, "held open") || r.elapsed > 10*time.Second {
			t.Fatalf("took %v, detail %q", r.elapsed, r.Detail)
		}
		if !gone(pid) {
			t.Fatalf("grandchild %d survived", pid)
		}
	})
	t.Run("escaped-group", func(t *testing.T) {
		// setsid takes the grandchild out of reach of the group kill: Run
		// still returns within its drain bound and says why.
		r := runOn(t, process.New(process.WithoutCgroup()), context.Background(), runtime.Spec{Argv: []string{helper, "orphan", "setsid"}}, 0)
		pid := firstPid(t, r.stdout)
		t.Cleanup(func() { killStray(pid) })
		want(t, r, runtime.Passed, 0)
		if r.elapsed > 4*time.Second {
			t.Fatalf("took %v", r.elapsed)
		}
		if !strings.Contains(r.Detail, "held open") {
			t.Fatalf("detail %q", r.Detail)
		}
		if c := r.Attestation.Profile["containment"]; c != "process-group" {
			t.Fatalf("containment %v", c)
		}
	})
	t.Run("escaped-group-cgroup", func(t *testing.T) {
		// In a cgroup the setsid'd grandchild is killed with the check, and
		// the pipe it held closes at once.
		r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "orphan", "setsid"}}, 0)
		pid := firstPid(t, r.stdout)
		t.Cleanup(func() { killStray(pid) })
		requireCgroup(t, r)
		want(t, r, runtime.Passed, 0)
		if strings.Contains(r.Detail, "held open") || r.elapsed > 2*time.Second {
			t.Fatalf("took %v, detail %q", r.elapsed, r.Detail)
		}
		if lock.Running(pid) {
			t.Fatalf("setsid'd grandchild %d survived the check", pid)
		}
	})
}

// requireCgroup skips a test that needs cgroup containment where the host
// does not delegate a cgroup v2 to the harness, and fails instead with
// PROOFGATE_REQUIRE_CGROUP=1 (CI hosts that have one must not skip).
func requireCgroup(t *testing.T, r result) {
	t.Helper()
	if c := r.Attestation.Profile["containment"]; c != "cgroup" {
		if os.Getenv("PROOFGATE_REQUIRE_CGROUP") == "1" {
			t.Fatalf("PROOFGATE_REQUIRE_CGROUP=1 but the containment was %v", c)
		}
		t.Skipf("no writable cgroup v2 here (containment %v)", c)
	}
}

// lineSink is a buffer that closes line when its first newline arrives.
type lineSink struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	line chan struct{}
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if bytes.IndexByte(s.buf.Bytes(), '\n') >= 0 {
		s.once.Do(func() { close(s.line) })
	}
	return len(p), nil
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &lineSink{line: make(chan struct{})}
	go func() {
		// Cancel once the check has started its SIGTERM-ignoring child.
		select {
		case <-sink.line:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	start := time.Now()
	res := process.New().Run(ctx, runtime.Spec{Argv: []string{helper, "spawn-ignoring"}, Workspace: t.TempDir()},
		runtime.NewCapture(sink, 0), runtime.NewCapture(io.Discard, 0))
	if res.Outcome != runtime.Error || res.Detail != "cancelled" {
		t.Fatalf("outcome %s detail %q", res.Outcome, res.Detail)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %v", el)
	}
	if pid := firstPid(t, &sink.buf); !gone(pid) {
		killStray(pid)
		t.Fatalf("child %d survived cancellation", pid)
	}

	// Already cancelled: nothing starts.
	ws := t.TempDir()
	r := run(t, ctx, runtime.Spec{Argv: []string{"/bin/sh", "-c", "touch started"}, Workspace: ws}, 0)
	want(t, r, runtime.Error, -1)
	if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
		t.Fatal("a cancelled run started the check")
	}
}

type failingSink struct{}

func (failingSink) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestSinkFailureIsAnError(t *testing.T) {
	o := runtime.NewCapture(failingSink{}, 0)
	e := runtime.NewCapture(&bytes.Buffer{}, 0)
	start := time.Now()
	res := process.New().Run(context.Background(), runtime.Spec{Argv: []string{helper, "flood", "stdout", strconv.Itoa(1 << 30)}, Workspace: t.TempDir()}, o, e)
	if res.Outcome != runtime.Error || !strings.Contains(res.Detail, "disk full") {
		t.Fatalf("outcome %s detail %q", res.Outcome, res.Detail)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

func TestAttestation(t *testing.T) {
	for _, c := range []struct {
		sb      runtime.Sandbox
		ignored bool
	}{
		{runtime.Sandbox{}, false},
		{runtime.Sandbox{Mounts: []runtime.Mount{}}, false},
		{runtime.Sandbox{Image: "alpine@sha256:abc"}, true},
		{runtime.Sandbox{Pids: 10}, true},
		{runtime.Sandbox{Mounts: []runtime.Mount{{Source: "a", Target: "/a"}}}, true},
	} {
		r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "exit", "0"}, Sandbox: c.sb}, 0)
		a := r.Attestation
		if a.Provider != "process" || a.Sandboxed {
			t.Fatalf("attestation %+v", a)
		}
		containment := a.Profile["containment"]
		if containment != "cgroup" && containment != "process-group" {
			t.Fatalf("containment %v", containment)
		}
		exe := map[string]any{"path": helper}
		if r, _ := filepath.EvalSymlinks(helper); r != helper {
			exe["resolved"] = r
		}
		wantProfile := map[string]any{"sandboxed": false, "path": process.DefaultPath, "ignored_sandbox": c.ignored,
			"containment": containment, "parent_death_signal": true, "executable": exe}
		if fmt.Sprint(a.Profile) != fmt.Sprint(wantProfile) {
			t.Fatalf("profile %v, want %v", a.Profile, wantProfile)
		}
		h, err := canon.Digest(wantProfile)
		if err != nil || a.ProfileHash != h {
			t.Fatalf("profile hash %s, want %s (%v)", a.ProfileHash, h, err)
		}
	}
}

func TestConcurrentRuns(t *testing.T) {
	rt := process.New()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ob, eb bytes.Buffer
			o, e := runtime.NewCapture(&ob, 0), runtime.NewCapture(&eb, 0)
			tag := fmt.Sprintf("run-%d", i)
			spec := runtime.Spec{Argv: []string{helper, "argv", tag}, Workspace: t.TempDir(), Env: map[string]string{"I": tag}}
			if i%4 == 3 {
				spec.Argv = []string{helper, "sleep", "10s"}
				spec.Timeout = 300 * time.Millisecond
			}
			res := rt.Run(context.Background(), spec, o, e)
			switch {
			case i%4 == 3 && res.Outcome != runtime.Timeout:
				errs <- fmt.Errorf("%s: outcome %s", tag, res.Outcome)
			case i%4 != 3 && (res.Outcome != runtime.Passed || strings.TrimSpace(ob.String()) != `["`+tag+`"]`):
				errs <- fmt.Errorf("%s: outcome %s stdout %q", tag, res.Outcome, ob.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkProcessTrivial(b *testing.B) {
	store := blob.New(b.TempDir())
	rt := process.New()
	ws := b.TempDir()
	for b.Loop() {
		ow, err := store.Create()
		if err != nil {
			b.Fatal(err)
		}
		ew, err := store.Create()
		if err != nil {
			b.Fatal(err)
		}
		res := rt.Run(context.Background(), runtime.Spec{Argv: []string{"/bin/true"}, Workspace: ws}, runtime.NewCapture(ow, 1<<20), runtime.NewCapture(ew, 1<<20))
		if res.Outcome != runtime.Passed {
			b.Fatalf("outcome %s %s", res.Outcome, res.Detail)
		}
		if _, _, err := ow.Commit(); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ew.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDirectExec(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessTrivialDiscard isolates the runtime's own overhead from
// the blob store's fsyncs.
func BenchmarkProcessTrivialDiscard(b *testing.B) {
	rt := process.New()
	ws := b.TempDir()
	for b.Loop() {
		res := rt.Run(context.Background(), runtime.Spec{Argv: []string{"/bin/true"}, Workspace: ws}, runtime.NewCapture(io.Discard, 1<<20), runtime.NewCapture(io.Discard, 1<<20))
		if res.Outcome != runtime.Passed {
			b.Fatalf("outcome %s %s", res.Outcome, res.Detail)
		}
	}
}

func TestStdinIsEmpty(t *testing.T) {
	// A check reading stdin sees EOF at once instead of hanging on the
	// harness's terminal or pipe.
	r := run(t, context.Background(), runtime.Spec{Argv: []string{"/bin/cat"}, Timeout: 10 * time.Second}, 0)
	want(t, r, runtime.Passed, 0)
	if r.stdout.Len() != 0 || r.elapsed > 5*time.Second {
		t.Fatalf("stdout %q after %v", r.stdout, r.elapsed)
	}
}

func TestEarlyCloseOfStdoutStillTimesOut(t *testing.T) {
	// Closing both streams must not end the watch: the timeout still applies.
	r := run(t, context.Background(), runtime.Spec{Argv: []string{"/bin/sh", "-c", "exec >&- 2>&-; sleep 30"}, Timeout: 500 * time.Millisecond}, 0)
	if r.Outcome != runtime.Timeout || r.elapsed > 3*time.Second {
		t.Fatalf("outcome %s after %v (%q)", r.Outcome, r.elapsed, r.Detail)
	}
}
