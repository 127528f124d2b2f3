//go:build unix

// The Unix implementation; the package comment is in process_common.go.

package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/runtime"
)

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
// The steps: resolve the command, prepare its pipes and containment, start
// it, supervise it until the main process exits, kill what is left and
// reap it, drain the pipes, classify.
func (r *Runtime) Run(ctx context.Context, spec runtime.Spec, stdout, stderr *runtime.Capture) runtime.Result {
	res := runtime.Result{ExitCode: -1, Started: time.Now().UTC()}
	var fromHost map[string]any
	spec.Env, fromHost = withHostEnv(spec.Env, spec.FromHost, os.LookupEnv)
	lookup, from := searchPath(spec.Env, fromHost)
	var exe *Executable // set once argv[0] is found
	fail := func(format string, args ...any) runtime.Result {
		if res.Attestation.Provider == "" { // failed before the start
			res.Attestation = attestation(lookup, exe, spec.Sandbox, lock.ContainGroup, fromHost, spec.Stdin)
		}
		return res.Fail(oneLine(fmt.Sprintf(format, args...)))
	}
	if stdout == nil || stderr == nil {
		return fail("process: nil capture")
	}
	if len(spec.Sandbox.Caches) > 0 {
		return fail("process: caches need the docker runtime: a host process cannot be given a read-only or scoped cache")
	}
	if err := ctx.Err(); err != nil {
		return fail("cancelled")
	}
	cmd, err := resolve(spec, lookup, from)
	if err != nil {
		return fail("%v", err)
	}
	found := describe(cmd.bin)
	exe = &found
	c, err := r.prepare(spec, cmd)
	if err != nil {
		return fail("%v", err)
	}
	defer c.ct.release()
	// Linux ties the parent-death signal to the thread that forked the
	// child, not to the process: were that thread to exit (the Go runtime
	// ends a thread whose locked goroutine returns without unlocking it),
	// the check would be killed although the harness lives. Locked here,
	// the thread runs nothing but this goroutine until the check is reaped.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	res.Started = time.Now().UTC()
	err = c.start(cmd)
	res.Attestation = attestation(lookup, exe, spec.Sandbox, c.ct.kind, fromHost, spec.Stdin)
	if err != nil {
		return fail("%v", err)
	}

	c.copyAndWatch(stdout, stderr)
	c.supervise(ctx, stdout, stderr)
	// The main process is dead: kill whatever is left of its group and
	// cgroup before reaping it, then reap.
	killErr := c.ct.kill(c.pgid)
	waitErr := c.waiter.reap()
	c.closeIn()
	// Finished is when the check ended, not when a leaked pipe let go.
	res.Finished = time.Now().UTC()
	held := c.drain(r.drainGrace)

	st := c.cmd.ProcessState
	if st == nil {
		// Wait failed without a state; this should not happen after a
		// successful Start and waitid.
		return fail("wait: %v", waitErr)
	}
	c.classify(&res, st, stdout, stderr)
	if killErr != nil {
		res.Detail = joinDetail(res.Detail, oneLine("descendants not all killed: "+killErr.Error()))
	}
	if held && res.Detail == "" {
		res.Detail = fmt.Sprintf("output pipe held open by a process outside the check's process group; stopped reading after %s", r.drainGrace)
	}
	if res.Outcome == runtime.Passed && len(spec.Produces) > 0 {
		if err := runtime.CollectDir(spec.Workspace, runtime.Products{Globs: spec.Produces, Collect: spec.Collect}); err != nil {
			return fail("produces: %v", err)
		}
	}
	return res
}

// command is a check's resolved command line.
type command struct {
	bin string   // the executable, as execvp would find it
	env []string // sorted KEY=VALUE
	wd  string   // the working directory, inside the workspace
}

// resolve checks the spec's environment, working directory and argv and
// finds the executable.
func resolve(spec runtime.Spec, lookup, from string) (command, error) {
	env, err := environ(spec.Env)
	if err != nil {
		return command{}, err
	}
	wd, err := workDir(spec.Workspace, spec.Dir)
	if err != nil {
		return command{}, err
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return command{}, errors.New("argv: empty")
	}
	for i, a := range spec.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return command{}, fmt.Errorf("argv[%d]: contains a NUL byte", i)
		}
	}
	bin, err := lookPath(spec.Argv[0], lookup, wd, from)
	if err != nil {
		return command{}, err
	}
	return command{bin: bin, env: env, wd: wd}, nil
}

// check is one check from its pipes to its classification: the state that
// Run's steps share. Everything but the copier and waiter goroutines'
// sends runs on Run's goroutine.
type check struct {
	spec      runtime.Spec
	killGrace time.Duration
	ct        *containment
	cmd       *exec.Cmd
	pgid      int
	waiter    *exitWaiter

	outR, outW, errR, errW *os.File
	// inR and inW are the stdin pipe when the spec has Stdin (else nil:
	// the child reads /dev/null). closeIn closes inW once.
	inR, inW *os.File
	closeIn  func()

	// events carries what the copiers, the exit waiter and the kill timer
	// report; each sends at most once, so its buffer holds them all and no
	// sender outlives Run blocked.
	events chan event

	reason                 stopReason
	sinkErr                error
	outPending, errPending bool
	kill                   *time.Timer // SIGTERM's grace, then SIGKILL
}

// event is one report on the events channel.
type event struct {
	kind eventKind
	err  error // a copier's result
}

type eventKind int

const (
	exitedEvent eventKind = iota // the main process exited (not yet reaped)
	stdoutEvent                  // the stdout copier stopped
	stderrEvent                  // the stderr copier stopped
	killEvent                    // SIGTERM's grace is over
)

// prepare opens the check's pipes and its containment.
func (r *Runtime) prepare(spec runtime.Spec, cmd command) (*check, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	c := &check{spec: spec, killGrace: r.killGrace, outR: outR, outW: outW, errR: errR, errW: errW,
		events: make(chan event, 4), outPending: true, errPending: true, closeIn: func() {}}
	if spec.Stdin != nil {
		if c.inR, c.inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		c.closeIn = sync.OnceFunc(func() { c.inW.Close() })
	}
	if c.ct, err = r.contain(spec.CheckID, spec.ProcDir, spec.KeepRecords); err != nil {
		closeAll(outR, outW, errR, errW)
		c.closeStdinPipe()
		return nil, err
	}
	return c, nil
}

// closeStdinPipe closes both ends of the stdin pipe, if there is one.
func (c *check) closeStdinPipe() {
	if c.inR != nil {
		c.inR.Close()
		c.closeIn()
	}
}

// feedStdin writes the spec's stdin into the pipe, then closes it, so the
// child reads the bytes and then end of file. A child that never reads
// cannot block the harness: Run closes the write end after reaping, which
// ends a pending write.
func (c *check) feedStdin() {
	if c.inR == nil {
		return
	}
	c.inR.Close() // the child holds its own copy
	go func() {
		_, _ = c.inW.Write(c.spec.Stdin)
		c.closeIn()
	}()
}

// start starts the command in the check's containment and records its
// process group. On failure nothing of the check is left running and the
// pipes are closed.
func (c *check) start(cmd command) error {
	newCmd := func(attr *syscall.SysProcAttr) *exec.Cmd {
		cmd := &exec.Cmd{Path: cmd.bin, Args: slices.Clone(c.spec.Argv), Env: cmd.env, Dir: cmd.wd,
			Stdout: c.outW, Stderr: c.errW, SysProcAttr: attr}
		if c.inR != nil {
			// An *os.File: the child gets the descriptor itself, and
			// exec starts no copying goroutine that Wait would wait for.
			cmd.Stdin = c.inR
		}
		return cmd
	}
	started, err := c.ct.start(newCmd)
	// The child holds its own copies of the write ends now (or never will).
	c.outW.Close()
	c.errW.Close()
	if err != nil {
		c.outR.Close()
		c.errR.Close()
		c.closeStdinPipe()
		return fmt.Errorf("start %s: %w", c.spec.Argv[0], unwrapPath(err))
	}
	c.feedStdin()
	c.cmd, c.pgid = started, started.Process.Pid
	if err := c.ct.started(c.pgid); err != nil {
		_ = c.ct.kill(c.pgid)
		_ = started.Wait()
		c.outR.Close()
		c.errR.Close()
		return err
	}
	return nil
}

// copyAndWatch starts the two copiers and the exit waiter, each reporting
// on c.events.
func (c *check) copyAndWatch(stdout, stderr *runtime.Capture) {
	go func() { c.events <- event{kind: stdoutEvent, err: pump(stdout, c.outR)} }()
	go func() { c.events <- event{kind: stderrEvent, err: pump(stderr, c.errR)} }()
	// The waiter reports when the main process has exited (on Linux: and
	// is not yet reaped, see exitWaiter).
	c.waiter = newExitWaiter(c.cmd)
	go func() {
		c.waiter.exited()
		c.events <- event{kind: exitedEvent}
	}()
}

// supervise enforces the limits until the main process exits.
func (c *check) supervise(ctx context.Context, stdout, stderr *runtime.Capture) {
	defer func() {
		if c.kill != nil {
			c.kill.Stop()
		}
	}()
	runtime.Supervise(ctx, c.spec.Timeout, stdout, stderr, c.events, c.handle, func(l runtime.Limit) {
		switch l {
		case runtime.LimitTimeout:
			c.terminate(stopTimeout)
		case runtime.LimitCancel:
			c.terminate(stopCancel)
		case runtime.LimitStdout, runtime.LimitStderr:
			c.terminate(stopOverflow)
		}
	})
}

// handle takes one event while the main process runs. The copiers are
// watched only for sink failures; EOF before exit is harmless (the check
// closed its stdout).
func (c *check) handle(e event) (exited bool) {
	switch e.kind {
	case exitedEvent:
		return true
	case killEvent:
		_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
	case stdoutEvent, stderrEvent:
		c.copied(e)
		if c.sinkErr != nil {
			c.terminate(stopSink)
		}
	}
	return false
}

// terminate stops the check for the first reason only: SIGTERM and, after
// killGrace, SIGKILL on a timeout or cancellation; SIGKILL at once on an
// overflow or a sink failure.
func (c *check) terminate(why stopReason) {
	if c.reason != stopNone {
		return
	}
	c.reason = why
	if why == stopTimeout || why == stopCancel {
		_ = syscall.Kill(-c.pgid, syscall.SIGTERM)
		c.kill = time.AfterFunc(c.killGrace, func() { c.events <- event{kind: killEvent} })
		return
	}
	_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
}

// copied records that a copier stopped, and the first sink failure.
func (c *check) copied(e event) {
	if e.kind == stdoutEvent {
		c.outPending = false
	} else {
		c.errPending = false
	}
	if e.err != nil && !errors.Is(e.err, runtime.ErrOutputLimit) && c.sinkErr == nil {
		c.sinkErr = e.err
	}
}

// drain waits for the copiers to read what the pipes still hold, then
// closes them. Only a process that left the group can keep the pipes open;
// after grace the reads are cut short and drain reports that they were held.
func (c *check) drain(grace time.Duration) (held bool) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for c.outPending || c.errPending {
		select {
		case e := <-c.events:
			if e.kind == stdoutEvent || e.kind == stderrEvent {
				c.copied(e)
			}
		case <-t.C:
			held = true
			now := time.Now()
			_ = c.outR.SetReadDeadline(now)
			_ = c.errR.SetReadDeadline(now)
			// The copiers now fail promptly with a deadline error; what
			// they report is not recorded.
			for c.outPending || c.errPending {
				switch e := <-c.events; e.kind {
				case stdoutEvent:
					c.outPending = false
				case stderrEvent:
					c.errPending = false
				}
			}
		}
	}
	c.outR.Close()
	c.errR.Close()
	return held
}

// classify sets the exit code, outcome and detail from the exit status and
// the reason the check was stopped, if any.
func (c *check) classify(res *runtime.Result, st *os.ProcessState, stdout, stderr *runtime.Capture) {
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		res.ExitCode = 128 + int(ws.Signal())
	default:
		res.ExitCode = st.ExitCode()
	}

	truncated := stdout.Stream().Truncated || stderr.Stream().Truncated
	switch {
	case c.reason == stopTimeout:
		res.Outcome = runtime.Timeout
		res.Detail = fmt.Sprintf("timed out after %s; process group killed", c.spec.Timeout)
	case c.reason == stopCancel:
		res.Outcome = runtime.Error
		res.Detail = "cancelled"
	case c.reason == stopOverflow || truncated:
		res.Outcome = runtime.OutputLimit
		res.Detail = "output limit exceeded on " + overflowed(stdout, stderr) + "; process group killed"
	case c.sinkErr != nil:
		res.Outcome = runtime.Error
		res.Detail = oneLine("storing output: " + c.sinkErr.Error())
	case ws.Signaled():
		res.Outcome = runtime.Failed
		res.Detail = "killed by signal " + unix.SignalName(ws.Signal())
	case res.ExitCode == 0:
		res.Outcome = runtime.Passed
	default:
		res.Outcome = runtime.Failed
	}
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

// pump copies r into c until EOF, a read error or a write error. It returns
// nil on EOF, the Capture's error otherwise (ErrOutputLimit on overflow), and
// nil for read errors: a failed or timed-out read of the pipe is not a
// failure of the evidence store.
func pump(c *runtime.Capture, r *os.File) error {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
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

// readBufs are the copiers' read buffers, reused across checks (two
// 64 KiB buffers per check were most of a governed tool call's garbage).
// Capture.Write copies what it keeps, so a buffer holds nothing once
// pump returns.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}

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
func attestation(path string, exe *Executable, sb runtime.Sandbox, containment string, fromHost map[string]any, stdin []byte) runtime.Attestation {
	profile := map[string]any{
		"sandboxed":           false,
		"path":                path,
		"ignored_sandbox":     sandboxRequested(sb),
		"containment":         containment,
		"parent_death_signal": parentDeathSignal,
	}
	if fromHost != nil {
		// Absent when the contract takes nothing from the harness, so
		// the profile (and its hash) of other checks is unchanged.
		profile["env_from_host"] = fromHost
	}
	if exe != nil {
		// The file argv[0] resolved to; absent when it was not found (and
		// in runs recorded before it was added, whose hashes stand).
		profile["executable"] = exe.profile()
	}
	if stdin != nil {
		// Likewise absent without stdin: digest and length, not the bytes.
		profile["stdin"] = runtime.StdinProfile(stdin)
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

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return s
}
