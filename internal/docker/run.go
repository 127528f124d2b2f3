package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// cleanupTimeout bounds each daemon call made after the check (kill,
// inspect, remove), which run on a context detached from the caller's.
const cleanupTimeout = 30 * time.Second

// streamGrace is how long output may keep arriving after the container
// exited before the attach stream is cut.
const streamGrace = 5 * time.Second

// Run runs one check in a fresh container and always returns a Result. The
// container is force-removed (with its anonymous volumes) before Run
// returns, also when ctx is cancelled or something panics.
//
// The steps: prepare (validate, resolve the image, build the profile),
// create the container (and, concurrently, copy the workspace in), attach
// and start,
// supervise until the container exited and its output is read, inspect,
// classify. Each resource is removed by a deferred cleanup registered as
// soon as it exists.
func (r *Runtime) Run(ctx context.Context, spec runtime.Spec, stdout, stderr *runtime.Capture) (res runtime.Result) {
	c := &checkRun{r: r, spec: spec, sb: r.effective(spec.Sandbox), stdout: stdout, stderr: stderr, res: &res,
		events: make(chan event, 4)}
	res.Started = time.Now().UTC()
	res.Attestation = runtime.Attestation{Provider: Provider, Sandboxed: true,
		DaemonVersion: r.daemonVersion, APIVersion: r.apiVersion, ImageRef: c.sb.Image}
	fail := func(format string, a ...any) runtime.Result {
		return res.Fail(fmt.Sprintf(format, a...))
	}
	defer func() {
		if p := recover(); p != nil {
			res = fail("docker: internal panic: %v", p)
		}
	}()
	if err := c.prepare(ctx); err != nil {
		return fail("%v", err)
	}

	// Calls after this point run on a context that the caller's cancellation
	// does not cut short; cancellation is observed explicitly and kills.
	c.bg = context.WithoutCancel(ctx)
	if c.p.copyWS {
		if err := r.createWorkspaceVolume(ctx, c.p); err != nil {
			return fail("%v", err)
		}
	}
	// The workspace copy does not need the check's container until the
	// copy is unpacked: the two go to the daemon together.
	copied := c.beginCopy(ctx)
	created, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: c.p.config, HostConfig: c.p.host})
	cp := <-copied
	c.id = created.ID
	// The holder and the container are removed together, then the volume.
	defer c.removeAll(cp.ws)
	if err != nil {
		return fail("docker: create container from %s (%s): %v", c.sb.Image, c.img.id, err)
	}
	if c.p.copyWS {
		if cp.err == nil {
			cp.err = cp.ws.awaitUnpacked(ctx, c.id)
		}
		if cp.err != nil {
			return c.copyFailed(cp.err)
		}
		c.ws = cp.ws
	}

	waitCtx, stopWait := context.WithCancel(c.bg)
	defer stopWait()
	att, err := c.attach(ctx, waitCtx)
	if err != nil {
		return fail("docker: attach: %v", err)
	}
	defer att.Close()
	if _, err := r.cli.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
		return fail("docker: start: %v", err)
	}
	res.Started = time.Now().UTC()
	c.feedStdin(att)

	c.supervise(ctx, att)
	if c.stuck {
		att.Close()
		return fail("docker: container %s did not stop after kill", c.id)
	}
	res.Finished = time.Now().UTC()

	st, err := c.inspect()
	if err != nil {
		return fail("%v", err)
	}
	collected := c.collect(ctx, st)
	wsFull, err := c.probe()
	if err != nil {
		return fail("%v", err)
	}
	res.ExitCode = st.ExitCode
	if res = c.classify(st, wsFull); res.Outcome == runtime.Passed && collected != nil {
		return fail("produces: %v", collected)
	}
	return res
}

// collect reads the products of a check that declares some and exited 0
// unkilled (collectProducts), before the probe; whether it passed is known
// only after. It returns why they could not be read, or nil.
func (c *checkRun) collect(ctx context.Context, st *container.State) error {
	if len(c.spec.Produces) == 0 || c.killed != "" || st.ExitCode != 0 || st.OOMKilled {
		return nil
	}
	return c.collectProducts(ctx)
}

// checkRun is one check in one container, from its preparation to its
// classification: the state Run's steps share. res is Run's result, which
// the deferred cleanups still amend.
type checkRun struct {
	r              *Runtime
	spec           runtime.Spec
	sb             runtime.Sandbox // spec.Sandbox with defaults applied
	stdout, stderr *runtime.Capture
	res            *runtime.Result
	bg             context.Context // the caller's context without its cancellation

	img image
	p   *plan
	id  string  // the container
	ws  *wsCopy // the copy-mode workspace, nil in other modes

	// events carries what the output copier, the exit waiter and the two
	// timers report; each sends at most once, so the buffer holds them all
	// and no sender outlives Run blocked.
	events chan event

	killed      runtime.Outcome // why the container was killed, first reason
	killDetail  string
	exited      bool
	streamEnd   bool
	streamErr   error
	waitErr     error
	grace       *time.Timer // cuts the attach stream after the exit
	hardStop    *time.Timer // gives up on a container that a kill did not stop
	stuck       bool
	attachClose func()
}

// event is one report on the events channel.
type event struct {
	kind eventKind
	err  error                  // the copier's or the waiter's error
	exit container.WaitResponse // exitedEvent's
}

type eventKind int

const (
	streamEvent   eventKind = iota // the attach stream ended
	exitedEvent                    // the container exited
	waitErrEvent                   // waiting for the exit failed
	graceEvent                     // streamGrace after the exit is over
	hardStopEvent                  // cleanupTimeout after the first kill is over
)

// prepare validates the spec, resolves the image and builds the container
// configuration, recording the image and the profile in the attestation.
func (c *checkRun) prepare(ctx context.Context) error {
	if len(c.spec.FromHost) > 0 {
		// The contract refuses env_from_host on docker checks: nothing of
		// the harness's environment reaches a sandbox.
		return errors.New("docker: env_from_host is for runtime: process checks only")
	}
	if err := validate(c.spec, c.sb); err != nil {
		return err
	}
	img, err := c.r.resolveImage(ctx, c.sb)
	if err != nil {
		return err
	}
	c.img = img
	c.res.Attestation.ImageID = img.id
	if img.pin == PinImageID {
		// Only the new case is recorded: repository-digest and tag pins
		// keep their attestation (image_ref says which) byte for byte.
		c.res.Attestation.ImagePin = string(img.pin)
	}
	p, err := c.r.build(c.spec, c.sb, img)
	if err != nil {
		return err
	}
	c.p = p
	c.res.Attestation.Profile = p.profile
	h, err := canon.Digest(p.profile)
	if err != nil {
		return fmt.Errorf("docker: profile hash: %w", err)
	}
	c.res.Attestation.ProfileHash = h
	return nil
}

// cleanUp makes one daemon call after the check, on a context of its own.
// Its failure makes the outcome an error, unless it already is one.
func (c *checkRun) cleanUp(call func(context.Context) error) {
	ctx, cancel := context.WithTimeout(c.bg, cleanupTimeout)
	defer cancel()
	c.cleanupFailed(call(ctx))
}

// cleanupFailed makes the outcome an error for a failed cleanup (err not
// nil), unless it already is one.
func (c *checkRun) cleanupFailed(err error) {
	if err != nil && c.res.Outcome != runtime.Error {
		c.res.Outcome, c.res.Detail = runtime.Error, err.Error()
	}
}

// copyStart is beginCopy's result: the copy in flight (nil when the
// holder was never created) and why it failed.
type copyStart struct {
	ws  *wsCopy
	err error
}

// beginCopy starts the copy-mode workspace copy (see startCopy) in the
// background and reports once everything is sent; without copy mode it
// reports at once.
func (c *checkRun) beginCopy(ctx context.Context) <-chan copyStart {
	done := make(chan copyStart, 1)
	if !c.p.copyWS {
		done <- copyStart{}
		return done
	}
	go func() {
		ws, err := c.r.startCopy(ctx, c.p, c.spec.Workspace, c.p.exclude)
		done <- copyStart{ws, err}
	}()
	return done
}

// removeAll removes what Run created, on contexts of their own: the copy
// holder (ws, when not nil) and the check's container together,
// then the workspace volume, which the daemon keeps while either uses it.
func (c *checkRun) removeAll(ws *wsCopy) {
	ctx, cancel := context.WithTimeout(c.bg, cleanupTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var holderErr, containerErr error
	if ws != nil {
		wg.Go(func() { holderErr = closeHolder(ctx, ws) })
	}
	if c.id != "" {
		wg.Go(func() { containerErr = c.removeContainer(ctx) })
	}
	wg.Wait()
	c.cleanupFailed(holderErr)
	c.cleanupFailed(containerErr)
	if c.p.copyWS {
		c.cleanUp(func(ctx context.Context) error { return c.r.removeVolume(ctx, c.p.wsVolume) })
	}
}

// removeContainer removes the check's container. A container already gone
// or being removed by someone else is removed: the check's outcome is the
// check's, not a cleanup race's.
func (c *checkRun) removeContainer(ctx context.Context) error {
	if err := c.r.remove(ctx, c.id); err != nil {
		return fmt.Errorf("docker: remove container %s: %w", c.id, err)
	}
	return nil
}

func closeHolder(ctx context.Context, ws *wsCopy) error {
	if err := ws.close(ctx); err != nil {
		return fmt.Errorf("docker: remove workspace copy holder: %w", err)
	}
	return nil
}

// copyFailed is the result of a workspace copy that failed: an error, or
// workspace-limit when the copy did not fit.
func (c *checkRun) copyFailed(err error) runtime.Result {
	c.res.Fail(err.Error())
	var limit *workspaceLimitError
	if errors.As(err, &limit) {
		c.res.Outcome = runtime.WorkspaceLimit
	}
	return *c.res
}

// attach registers the wait for the container's exit (on waitCtx) and the
// attach stream, both before the start so that no output and no exit can
// be missed; the two requests go out concurrently. The exit is reported on
// c.events.
func (c *checkRun) attach(ctx, waitCtx context.Context) (client.ContainerAttachResult, error) {
	waitReady := make(chan client.ContainerWaitResult, 1)
	go func() {
		waitReady <- c.r.cli.ContainerWait(waitCtx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	}()
	att, err := c.r.cli.ContainerAttach(ctx, c.id, client.ContainerAttachOptions{Stream: true, Stdin: c.spec.Stdin != nil, Stdout: true, Stderr: true})
	wait := <-waitReady
	if err != nil {
		return att, err
	}
	go func() {
		select {
		case w := <-wait.Result:
			c.events <- event{kind: exitedEvent, exit: w}
		case err := <-wait.Error:
			c.events <- event{kind: waitErrEvent, err: err}
		}
	}()
	return att, nil
}

// feedStdin writes the spec's stdin into the attach connection and then
// half-closes it, which (StdinOnce) closes the container's stdin after the
// bytes. A container that never reads cannot block Run: the deferred
// att.Close ends a pending write.
func (c *checkRun) feedStdin(att client.ContainerAttachResult) {
	if c.spec.Stdin == nil {
		return
	}
	go func() {
		if _, err := att.Conn.Write(c.spec.Stdin); err == nil {
			_ = att.CloseWrite()
		}
	}()
}

// supervise copies the output and kills the container on the first limit
// it reaches, until the container exited and its output ended (or the
// stream was cut a grace after the exit), or until a killed container did
// not stop (c.stuck).
func (c *checkRun) supervise(ctx context.Context, att client.ContainerAttachResult) {
	c.attachClose = att.Close
	go func() {
		// Overflow does not stop the copy: the rest is drained and
		// discarded (Full triggers the kill), because a stream nobody
		// reads keeps the daemon from finishing the container's exit.
		_, err := stdcopy.StdCopy(drainOnFull{c.stdout}, drainOnFull{c.stderr}, att.Reader)
		c.events <- event{kind: streamEvent, err: err}
	}()
	defer func() {
		for _, t := range []*time.Timer{c.grace, c.hardStop} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	runtime.Supervise(ctx, c.spec.Timeout, c.stdout, c.stderr, c.events, c.handle, func(l runtime.Limit) {
		switch l {
		case runtime.LimitStdout:
			c.kill(runtime.OutputLimit, "stdout exceeded its limit")
		case runtime.LimitStderr:
			c.kill(runtime.OutputLimit, "stderr exceeded its limit")
		case runtime.LimitTimeout:
			c.kill(runtime.Timeout, fmt.Sprintf("timed out after %s", c.spec.Timeout))
		case runtime.LimitCancel:
			c.kill(runtime.Error, fmt.Sprintf("cancelled: %v", ctx.Err()))
		}
	})
}

// handle takes one event; it reports whether supervision is over.
func (c *checkRun) handle(e event) (over bool) {
	switch e.kind {
	case streamEvent:
		c.streamEnd = true
		if e.err != nil && !errors.Is(e.err, io.EOF) && c.killed == "" && !c.exited {
			c.streamErr = e.err
			c.kill(runtime.Error, fmt.Sprintf("output stream: %v", e.err))
		}
	case exitedEvent, waitErrEvent:
		c.exited = true
		c.waitErr = e.err
		if e.kind == exitedEvent && e.exit.Error != nil && e.exit.Error.Message != "" {
			c.waitErr = errors.New(e.exit.Error.Message)
		}
		if !c.streamEnd {
			c.grace = c.after(streamGrace, graceEvent)
		}
	case graceEvent:
		c.attachClose()
	case hardStopEvent:
		c.stuck = true
		return true
	}
	return c.exited && c.streamEnd
}

// kill records the first reason the container is killed and sends SIGKILL
// (again, on every call).
func (c *checkRun) kill(o runtime.Outcome, detail string) {
	if c.killed == "" {
		c.killed, c.killDetail = o, detail
	}
	kctx, cancel := context.WithTimeout(c.bg, cleanupTimeout)
	defer cancel()
	_, _ = c.r.cli.ContainerKill(kctx, c.id, client.ContainerKillOptions{Signal: "SIGKILL"})
	if c.hardStop == nil {
		c.hardStop = c.after(cleanupTimeout, hardStopEvent)
	}
}

// after reports kind on c.events once d has passed.
func (c *checkRun) after(d time.Duration, kind eventKind) *time.Timer {
	return time.AfterFunc(d, func() { c.events <- event{kind: kind} })
}

// probe reports whether a copy-mode workspace is full after the check:
// the check hit its workspace_size. A probe that fails fails the run
// unless the container was killed.
func (c *checkRun) probe() (full bool, err error) {
	if c.ws == nil {
		return false, nil
	}
	full, err = c.ws.probe()
	if err != nil && c.killed == "" {
		return false, err
	}
	return full, nil
}

// inspect returns the container's final state, and checks that it ran the
// resolved image and that the reference still names that image. The image
// is looked up concurrently with the container's inspect.
func (c *checkRun) inspect() (*container.State, error) {
	ictx, cancel := context.WithTimeout(c.bg, cleanupTimeout)
	defer cancel()
	type imageAfter struct {
		id  string
		err error
	}
	imgAfter := make(chan imageAfter, 1)
	ref := c.sb.Image
	if c.img.pin == PinImageID {
		ref = c.img.id // the name's tags may move; the ID is the pin
	}
	go func() {
		after, err := c.r.cli.ImageInspect(ictx, ref)
		imgAfter <- imageAfter{after.ID, err}
	}()
	ins, err := c.r.cli.ContainerInspect(ictx, c.id, client.ContainerInspectOptions{})
	after := <-imgAfter
	if err != nil {
		return nil, fmt.Errorf("docker: inspect container: %w", err)
	}
	st := ins.Container.State
	if st == nil {
		return nil, errors.New("docker: inspect container: no state")
	}
	imageID := c.img.id
	if ins.Container.Image != imageID {
		return nil, fmt.Errorf("docker: container ran image %s, not the resolved %s", ins.Container.Image, imageID)
	}
	if after.err != nil || after.id != imageID {
		got := "nothing"
		if after.err == nil {
			got = after.id
		}
		return nil, fmt.Errorf("docker: image %s changed during the run: resolved %s before start, %s after", c.sb.Image, imageID, got)
	}
	return st, nil
}

// classify sets the outcome from the kill reason, the container's state,
// the workspace probe and the output sinks, in that order.
func (c *checkRun) classify(st *container.State, wsFull bool) runtime.Result {
	res, sb := c.res, c.sb
	switch {
	case c.killed != "" && c.streamErr != nil:
		return res.Fail("docker: " + c.killDetail)
	case c.killed != "":
		res.Outcome, res.Detail = c.killed, c.killDetail
	case st.OOMKilled:
		res.Outcome, res.Detail = runtime.OOM, fmt.Sprintf("killed by the kernel OOM killer (memory limit %d bytes)", sb.Memory)
	case wsFull:
		res.Outcome, res.Detail = runtime.WorkspaceLimit, fmt.Sprintf("the check filled its workspace (workspace_size %d bytes)", sb.WorkspaceSize)
	case c.waitErr != nil:
		return res.Fail(fmt.Sprintf("docker: wait: %v", c.waitErr))
	case c.stdout.Err() != nil || c.stderr.Err() != nil:
		return res.Fail(fmt.Sprintf("docker: output sink: %v", errors.Join(c.stdout.Err(), c.stderr.Err())))
	case st.ExitCode == 0:
		res.Outcome = runtime.Passed
	case st.ExitCode == 137 && sb.Memory > 0:
		// Docker 20.10 misses an OOM kill that happens before the shim
		// watches the container's memory cgroup (the first moments after
		// start): the check then fails as a plain SIGKILL.
		res.Outcome = runtime.Failed
		res.Detail = fmt.Sprintf("killed by SIGKILL (exit 137); the daemon reported no OOM kill (memory limit %d bytes; Docker misses one in the first moments after start)", sb.Memory)
	default:
		res.Outcome = runtime.Failed
	}
	return *res
}

// image is what the run needs from the resolved image.
type image struct {
	id  string
	pin Pin
	env []string // the image configuration's environment, KEY=VALUE
}

// resolveImage applies the pull policy and returns the image's ID, how
// the reference pinned it and its configured environment. An image-ID pin
// that is present is never pulled, also under pull: always: no registry
// serves an image ID, and the daemon has exactly the pinned bytes.
func (r *Runtime) resolveImage(ctx context.Context, sb runtime.Sandbox) (image, error) {
	img, err := r.LookUp(ctx, sb.Image)
	absent := errors.Is(err, ErrImageNotPresent)
	switch {
	case err != nil && !absent:
		return image{}, err
	case err == nil && (sb.Pull != "always" || img.Pin == PinImageID):
		return image{id: img.ID, pin: img.Pin, env: img.Env}, nil
	case absent && sb.Pull != "missing" && sb.Pull != "always":
		return image{}, notPullable(sb.Image, fmt.Errorf("docker: image %s is not present (pull: %s): run 'docker pull %s', or set pull: missing on the check", sb.Image, sb.Pull, sb.Image))
	}
	if err := r.pull(ctx, sb.Image); err != nil {
		return image{}, notPullable(sb.Image, err)
	}
	if img, err = r.LookUp(ctx, sb.Image); err != nil {
		return image{}, err
	}
	return image{id: img.ID, pin: img.Pin, env: img.Env}, nil
}

func (r *Runtime) pull(ctx context.Context, ref string) error {
	rc, err := r.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return fmt.Errorf("docker: pull %s: %w", ref, err)
	}
	if err := drain(rc); err != nil {
		return fmt.Errorf("docker: pull %s: %w", ref, err)
	}
	return nil
}

// drainOnFull writes into a Capture and, once the Capture is full, accepts
// and discards the rest so the attach stream keeps draining. Sink errors
// still stop the copy.
type drainOnFull struct{ c *runtime.Capture }

func (d drainOnFull) Write(p []byte) (int, error) {
	if _, err := d.c.Write(p); err != nil && !errors.Is(err, runtime.ErrOutputLimit) {
		return 0, err
	}
	return len(p), nil
}
