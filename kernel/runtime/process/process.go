// Package process is the unsandboxed runtime provider: it runs a check as a
// plain child process of the harness, records that it did so
// (attestation provider "process", sandboxed false) and ignores the
// container settings of the spec, recording that it ignored them.
//
// What it guarantees: argv is executed directly (never through a shell); the
// environment is exactly spec.Env; the working directory stays inside the
// workspace; the check runs in its own process group, and that whole group
// is killed on timeout, on output overflow, on cancellation and as soon as
// the main process exits, so neither children that ignore SIGTERM nor
// grandchildren holding the output pipes outlive the check or hang the
// harness. What it cannot guarantee: a descendant that leaves the process
// group (setsid, setpgid) escapes the kill; Run still returns within a bounded
// time, but the escaped process keeps running. Use the Docker provider for
// isolation.
package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proofgate/proofgate/kernel/canon"
	"github.com/proofgate/proofgate/kernel/lock"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// DefaultPath is the command search path used when spec.Env declares no PATH.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Provider is the attestation provider name.
const Provider = "process"

const (
	// killGrace is how long a check gets between SIGTERM and SIGKILL on a
	// timeout or cancellation.
	killGrace = time.Second
	// drainGrace bounds how long Run keeps reading the output pipes after
	// the check's process group is dead: only a process that escaped the
	// group can still hold them open.
	drainGrace = 2 * time.Second
	// readBuf is the size of one read from a pipe.
	readBuf = 64 << 10
)

// Runtime runs checks as child processes. The zero value is not used; call
// New. A Runtime holds no mutable state and is safe for concurrent use.
type Runtime struct {
	killGrace  time.Duration
	drainGrace time.Duration
	noCgroup   bool
}

var _ runtime.Runtime = (*Runtime)(nil)

// Option configures New.
type Option func(*Runtime)

// WithoutCgroup keeps checks out of cgroups even where the host delegates
// one: the containment is the process group alone (attested as such).
func WithoutCgroup() Option { return func(r *Runtime) { r.noCgroup = true } }

// New returns the process runtime.
func New(opts ...Option) *Runtime {
	r := &Runtime{killGrace: killGrace, drainGrace: drainGrace}
	for _, o := range opts {
		o(r)
	}
	return r
}

// stop reasons, in the order Run may decide them.
type stopReason int

const (
	stopNone stopReason = iota
	stopTimeout
	stopOverflow
	stopCancel
	stopSink
)

// Run executes spec and always returns a Result; see the package comment.
func (r *Runtime) Run(ctx context.Context, spec runtime.Spec, stdout, stderr *runtime.Capture) runtime.Result {
	res := runtime.Result{ExitCode: -1, Started: time.Now().UTC()}
	lookup, declared := spec.Env["PATH"]
	if !declared {
		lookup = DefaultPath
	}
	res.Attestation = attestation(lookup, spec.Sandbox, lock.ContainGroup)
	fail := func(format string, args ...any) runtime.Result {
		res.Outcome = runtime.Error
		res.Detail = oneLine(fmt.Sprintf(format, args...))
		res.Finished = time.Now().UTC()
		return res
	}
	if stdout == nil || stderr == nil {
		return fail("process: nil capture")
	}
	if err := ctx.Err(); err != nil {
		return fail("cancelled")
	}

	env, err := environ(spec.Env)
	if err != nil {
		return fail("%v", err)
	}
	wd, err := workDir(spec.Workspace, spec.Dir)
	if err != nil {
		return fail("%v", err)
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return fail("argv: empty")
	}
	for i, a := range spec.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fail("argv[%d]: contains a NUL byte", i)
		}
	}
	bin, err := lookPath(spec.Argv[0], lookup, wd, declared)
	if err != nil {
		return fail("%v", err)
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		return fail("stdout pipe: %v", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fail("stderr pipe: %v", err)
	}
	ct, err := r.contain(spec.CheckID, spec.ProcDir)
	if err != nil {
		closeAll(outR, outW, errR, errW)
		return fail("%v", err)
	}
	defer ct.release()
	newCmd := func(attr *syscall.SysProcAttr) *exec.Cmd {
		return &exec.Cmd{Path: bin, Args: slices.Clone(spec.Argv), Env: env, Dir: wd,
			Stdout: outW, Stderr: errW, SysProcAttr: attr}
	}
	// Linux ties the parent-death signal to the thread that forked the
	// child, not to the process: were that thread to exit (the Go runtime
	// ends a thread whose locked goroutine returns without unlocking it),
	// the check would be killed although the harness lives. Locked here,
	// the thread runs nothing but this goroutine until the check is reaped.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	res.Started = time.Now().UTC()
	cmd, err := ct.start(newCmd)
	res.Attestation = attestation(lookup, spec.Sandbox, ct.kind)
	// The child holds its own copies of the write ends now (or never will).
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return fail("start %s: %v", spec.Argv[0], unwrapPath(err))
	}
	pgid := cmd.Process.Pid
	if err := ct.started(pgid); err != nil {
		_ = ct.kill(pgid)
		_ = cmd.Wait()
		outR.Close()
		errR.Close()
		return fail("%v", err)
	}

	// Copy both streams. A copier reports why it stopped on its channel.
	outDone := make(chan error, 1)
	errDone := make(chan error, 1)
	go func() { outDone <- pump(stdout, outR) }()
	go func() { errDone <- pump(stderr, errR) }()

	// exited fires when the main process has exited (on Linux: and is not
	// yet reaped, see exitWaiter).
	waiter := newExitWaiter(cmd)
	exited := make(chan struct{})
	go func() {
		waiter.exited()
		close(exited)
	}()

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var grace <-chan time.Time
	reason := stopNone
	var sinkErr error
	terminate := func(why stopReason) {
		if reason != stopNone {
			return
		}
		reason = why
		if why == stopTimeout || why == stopCancel {
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			grace = time.After(r.killGrace)
			return
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	outPending, errPending := true, true
	full1, full2 := stdout.Full(), stderr.Full()
	done := ctx.Done()
	// Watch the copiers only for sink failures while the process runs; EOF
	// before exit is harmless (the check closed its stdout).
	onCopy := func(err error) {
		if err != nil && !errors.Is(err, runtime.ErrOutputLimit) && sinkErr == nil {
			sinkErr = err
			terminate(stopSink)
		}
	}
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-timeout:
			timeout = nil
			terminate(stopTimeout)
		case <-done:
			done = nil
			terminate(stopCancel)
		case <-full1:
			full1 = nil
			terminate(stopOverflow)
		case <-full2:
			full2 = nil
			terminate(stopOverflow)
		case <-grace:
			grace = nil
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case err := <-outDone:
			outPending = false
			outDone = nil
			onCopy(err)
		case err := <-errDone:
			errPending = false
			errDone = nil
			onCopy(err)
		}
	}
	// The main process is dead: kill whatever is left of its group and
	// cgroup before reaping it, then reap.
	killErr := ct.kill(pgid)
	waitErr := waiter.reap()
	// Finished is when the check ended, not when a leaked pipe let go.
	res.Finished = time.Now().UTC()

	// Drain what the pipes still hold. Only a process that left the group
	// can keep them open; stop reading after drainGrace.
	drain := time.NewTimer(r.drainGrace)
	defer drain.Stop()
	held := false
	for outPending || errPending {
		select {
		case err := <-outDone:
			outPending = false
			onCopyAfter(&sinkErr, err)
		case err := <-errDone:
			errPending = false
			onCopyAfter(&sinkErr, err)
		case <-drain.C:
			held = true
			now := time.Now()
			_ = outR.SetReadDeadline(now)
			_ = errR.SetReadDeadline(now)
			// The copiers now fail promptly with a deadline error.
			if outPending {
				<-outDone
				outPending = false
			}
			if errPending {
				<-errDone
				errPending = false
			}
		}
	}
	outR.Close()
	errR.Close()

	st := cmd.ProcessState
	if st == nil {
		// Wait failed without a state; this should not happen after a
		// successful Start and waitid.
		return fail("wait: %v", waitErr)
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.ExitCode = 128 + int(ws.Signal())
	default:
		res.ExitCode = st.ExitCode()
	}

	truncated := stdout.Stream().Truncated || stderr.Stream().Truncated
	switch {
	case reason == stopTimeout:
		res.Outcome = runtime.Timeout
		res.Detail = fmt.Sprintf("timed out after %s; process group killed", spec.Timeout)
	case reason == stopCancel:
		res.Outcome = runtime.Error
		res.Detail = "cancelled"
	case reason == stopOverflow || truncated:
		res.Outcome = runtime.OutputLimit
		res.Detail = "output limit exceeded on " + overflowed(stdout, stderr) + "; process group killed"
	case sinkErr != nil:
		res.Outcome = runtime.Error
		res.Detail = oneLine("storing output: " + sinkErr.Error())
	case ws.Signaled():
		res.Outcome = runtime.Failed
		res.Detail = "killed by signal " + unix.SignalName(ws.Signal())
	case res.ExitCode == 0:
		res.Outcome = runtime.Passed
	default:
		res.Outcome = runtime.Failed
	}
	if killErr != nil {
		res.Detail = joinDetail(res.Detail, oneLine("descendants not all killed: "+killErr.Error()))
	}
	if held && res.Detail == "" {
		res.Detail = fmt.Sprintf("output pipe held open by a process outside the check's process group; stopped reading after %s", r.drainGrace)
	}
	return res
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func onCopyAfter(sinkErr *error, err error) {
	if err != nil && !errors.Is(err, runtime.ErrOutputLimit) && *sinkErr == nil {
		*sinkErr = err
	}
}

// pump copies r into c until EOF, a read error or a write error. It returns
// nil on EOF, the Capture's error otherwise (ErrOutputLimit on overflow), and
// nil for read errors: a failed or timed-out read of the pipe is not a
// failure of the evidence store.
func pump(c *runtime.Capture, r *os.File) error {
	buf := make([]byte, readBuf)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if rerr != nil {
			return nil
		}
	}
}

func overflowed(stdout, stderr *runtime.Capture) string {
	o, e := stdout.Stream().Truncated, stderr.Stream().Truncated
	switch {
	case o && e:
		return "stdout and stderr"
	case e:
		return "stderr"
	}
	return "stdout"
}

// attestation records how the process runtime ran a check.
func attestation(path string, sb runtime.Sandbox, containment string) runtime.Attestation {
	profile := map[string]any{
		"sandboxed":           false,
		"path":                path,
		"ignored_sandbox":     sandboxRequested(sb),
		"containment":         containment,
		"parent_death_signal": parentDeathSignal,
	}
	hash, err := canon.Digest(profile)
	if err != nil {
		// A map of bools and strings always encodes.
		panic(fmt.Sprintf("process: profile digest: %v", err))
	}
	return runtime.Attestation{Provider: Provider, Sandboxed: false, Profile: profile, ProfileHash: hash}
}

func sandboxRequested(sb runtime.Sandbox) bool {
	// Every Sandbox field is omitempty, so any requested setting, including
	// fields added later, shows up in its JSON.
	b, err := json.Marshal(sb)
	return err != nil || string(b) != "{}"
}

// environ renders env as sorted KEY=VALUE lines, refusing what execve would
// mangle.
func environ(env map[string]string) ([]string, error) {
	out := make([]string, 0, len(env))
	for k, v := range env {
		switch {
		case k == "":
			return nil, errors.New("env: empty variable name")
		case strings.ContainsAny(k, "=\x00"):
			return nil, fmt.Errorf("env: variable name %q contains '=' or NUL", k)
		case strings.IndexByte(v, 0) >= 0:
			return nil, fmt.Errorf("env.%s: value contains a NUL byte", k)
		}
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out, nil
}

// workDir resolves the check's working directory and refuses one outside the
// workspace, lexically or through a symlink.
func workDir(workspace, dir string) (string, error) {
	if !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("workspace %q: not an absolute path", workspace)
	}
	if dir != "" && !filepath.IsLocal(dir) {
		return "", fmt.Errorf("dir %q: escapes the workspace", dir)
	}
	wd := filepath.Join(workspace, dir)
	fi, err := os.Stat(wd)
	if err != nil {
		return "", fmt.Errorf("working directory %s: %w", wd, unwrapPath(err))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("working directory %s: not a directory", wd)
	}
	if dir != "" {
		rw, err1 := filepath.EvalSymlinks(workspace)
		rd, err2 := filepath.EvalSymlinks(wd)
		if err := errors.Join(err1, err2); err != nil {
			return "", fmt.Errorf("working directory %s: %w", wd, err)
		}
		if rel, err := filepath.Rel(rw, rd); err != nil || !filepath.IsLocal(rel) && rel != "." {
			return "", fmt.Errorf("dir %q: resolves to %s, outside the workspace", dir, rd)
		}
	}
	return wd, nil
}

// lookPath finds name the way execvp would from the check's working
// directory: a name with a slash is used as it is (relative to wd), a bare
// name is searched in path, relative entries resolved against wd.
func lookPath(name, path, wd string, declared bool) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("executable %s: %w", name, err)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(wd, d)
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	src := "default PATH"
	if declared {
		src = "declared PATH"
	}
	return "", fmt.Errorf("executable %q not found in %s %q", name, src, path)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return unwrapPath(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return fs.ErrPermission
	}
	return nil
}

// unwrapPath drops the *PathError wrapper whose path the caller already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return s
}
