package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/kernel/canon"
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
func (r *Runtime) Run(ctx context.Context, spec runtime.Spec, stdout, stderr *runtime.Capture) (res runtime.Result) {
	sb := r.effective(spec.Sandbox)
	res.Started = time.Now().UTC()
	res.Attestation = runtime.Attestation{
		Provider:      Provider,
		Sandboxed:     true,
		DaemonVersion: r.daemonVersion,
		APIVersion:    r.apiVersion,
		ImageRef:      sb.Image,
	}
	fail := func(format string, a ...any) runtime.Result {
		res.Outcome = runtime.Error
		res.ExitCode = -1
		res.Detail = fmt.Sprintf(format, a...)
		res.Finished = time.Now().UTC()
		return res
	}
	defer func() {
		if p := recover(); p != nil {
			res = fail("docker: internal panic: %v", p)
		}
	}()
	if err := validate(spec, sb); err != nil {
		return fail("%v", err)
	}

	img, err := r.resolveImage(ctx, sb)
	if err != nil {
		return fail("%v", err)
	}
	imageID := img.id
	res.Attestation.ImageID = imageID

	p, err := r.build(spec, sb, img)
	if err != nil {
		return fail("%v", err)
	}
	res.Attestation.Profile = p.profile
	if h, err := canon.Digest(p.profile); err == nil {
		res.Attestation.ProfileHash = h
	} else {
		return fail("docker: profile hash: %v", err)
	}

	// Calls after this point run on a context that the caller's cancellation
	// does not cut short; cancellation is observed explicitly and kills.
	bg := context.WithoutCancel(ctx)
	if p.copyWS {
		if err := r.createWorkspaceVolume(ctx, p); err != nil {
			return fail("%v", err)
		}
		// Registered first, so it runs last: after the container and the
		// copy holder that use the volume are gone.
		defer func() {
			cctx, cancel := context.WithTimeout(bg, cleanupTimeout)
			defer cancel()
			if err := r.removeVolume(cctx, p.wsVolume); err != nil && res.Outcome != runtime.Error {
				res.Outcome, res.Detail = runtime.Error, err.Error()
			}
		}()
	}
	created, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: p.config, HostConfig: p.host})
	if err != nil {
		return fail("docker: create container from %s (%s): %v", sb.Image, imageID, err)
	}
	id := created.ID
	defer func() {
		cctx, cancel := context.WithTimeout(bg, cleanupTimeout)
		defer cancel()
		// A container already gone or being removed by someone else is
		// removed: the check's outcome is the check's, not a cleanup race's.
		if err := r.remove(cctx, id); err != nil && res.Outcome != runtime.Error {
			res.Outcome = runtime.Error
			res.Detail = fmt.Sprintf("docker: remove container %s: %v", id, err)
		}
	}()

	var ws *wsCopy
	if p.copyWS {
		c, err := r.startCopy(ctx, p, id, spec.Workspace, spec.Exclude)
		if c != nil {
			defer func() {
				cctx, cancel := context.WithTimeout(bg, cleanupTimeout)
				defer cancel()
				if err := c.close(cctx); err != nil && res.Outcome != runtime.Error {
					res.Outcome, res.Detail = runtime.Error, fmt.Sprintf("docker: remove workspace copy holder: %v", err)
				}
			}()
		}
		var limit *workspaceLimitError
		if errors.As(err, &limit) {
			res = fail("%v", err)
			res.Outcome = runtime.WorkspaceLimit
			return res
		}
		if err != nil {
			return fail("%v", err)
		}
		ws = c
	}

	// Attach and wait are both registered before start (so no output and
	// no exit can be missed); the two requests go out concurrently.
	waitCtx, stopWait := context.WithCancel(bg)
	defer stopWait()
	waitReady := make(chan client.ContainerWaitResult, 1)
	go func() {
		waitReady <- r.cli.ContainerWait(waitCtx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	}()
	att, err := r.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	wait := <-waitReady
	if err != nil {
		return fail("docker: attach: %v", err)
	}
	defer att.Close()

	if _, err := r.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return fail("docker: start: %v", err)
	}
	res.Started = time.Now().UTC()

	streamDone := make(chan error, 1)
	go func() {
		// Overflow does not stop the copy: the rest is drained and
		// discarded (Full triggers the kill), because a stream nobody
		// reads keeps the daemon from finishing the container's exit.
		_, err := stdcopy.StdCopy(drainOnFull{stdout}, drainOnFull{stderr}, att.Reader)
		streamDone <- err
	}()

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var (
		killed     runtime.Outcome
		killDetail string
		exited     bool
		streamEnd  bool
		streamErr  error
		waitErr    error
		grace      <-chan time.Time
		hardStop   <-chan time.Time
		outFull    = stdout.Full()
		errFull    = stderr.Full()
		done       = ctx.Done()
	)
	kill := func(o runtime.Outcome, detail string) {
		if killed == "" {
			killed, killDetail = o, detail
		}
		kctx, cancel := context.WithTimeout(bg, cleanupTimeout)
		defer cancel()
		_, _ = r.cli.ContainerKill(kctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
		if hardStop == nil {
			hardStop = time.After(cleanupTimeout)
		}
	}
	for !(exited && streamEnd) {
		select {
		case err := <-streamDone:
			streamEnd, streamDone = true, nil
			if err != nil && !errors.Is(err, io.EOF) && killed == "" && !exited {
				streamErr = err
				kill(runtime.Error, fmt.Sprintf("output stream: %v", err))
			}
		case w := <-wait.Result:
			exited, wait.Result, wait.Error = true, nil, nil
			if w.Error != nil && w.Error.Message != "" {
				waitErr = errors.New(w.Error.Message)
			}
			if !streamEnd {
				grace = time.After(streamGrace)
			}
		case err := <-wait.Error:
			exited, wait.Result, wait.Error = true, nil, nil
			waitErr = err
			if !streamEnd {
				grace = time.After(streamGrace)
			}
		case <-outFull:
			outFull = nil
			kill(runtime.OutputLimit, "stdout exceeded its limit")
		case <-errFull:
			errFull = nil
			kill(runtime.OutputLimit, "stderr exceeded its limit")
		case <-timeout:
			timeout = nil
			kill(runtime.Timeout, fmt.Sprintf("timed out after %s", spec.Timeout))
		case <-done:
			done = nil
			kill(runtime.Error, fmt.Sprintf("cancelled: %v", ctx.Err()))
		case <-grace:
			grace = nil
			att.Close()
		case <-hardStop:
			att.Close()
			return fail("docker: container %s did not stop after kill", id)
		}
	}
	res.Finished = time.Now().UTC()

	// A copy-mode workspace is probed after the check: full means the check
	// hit its workspace_size.
	wsFull := false
	if ws != nil {
		full, err := ws.probe()
		if err != nil && killed == "" {
			return fail("%v", err)
		}
		wsFull = full
	}

	ictx, cancel := context.WithTimeout(bg, cleanupTimeout)
	defer cancel()
	// The image is looked up again (concurrently with the container's
	// inspect): the reference must still name the image that ran.
	type imageAfter struct {
		id  string
		err error
	}
	imgAfter := make(chan imageAfter, 1)
	go func() {
		after, err := r.cli.ImageInspect(ictx, sb.Image)
		imgAfter <- imageAfter{after.ID, err}
	}()
	ins, err := r.cli.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	after := <-imgAfter
	if err != nil {
		return fail("docker: inspect container: %v", err)
	}
	st := ins.Container.State
	if st == nil {
		return fail("docker: inspect container: no state")
	}
	res.ExitCode = st.ExitCode
	if ins.Container.Image != imageID {
		return fail("docker: container ran image %s, not the resolved %s", ins.Container.Image, imageID)
	}
	if after.err != nil || after.id != imageID {
		got := "nothing"
		if after.err == nil {
			got = after.id
		}
		return fail("docker: image %s changed during the run: resolved %s before start, %s after", sb.Image, imageID, got)
	}
	switch {
	case killed != "" && streamErr != nil:
		return fail("docker: %s", killDetail)
	case killed != "":
		res.Outcome, res.Detail = killed, killDetail
	case st.OOMKilled:
		res.Outcome, res.Detail = runtime.OOM, fmt.Sprintf("killed by the kernel OOM killer (memory limit %d bytes)", sb.Memory)
	case wsFull:
		res.Outcome, res.Detail = runtime.WorkspaceLimit, fmt.Sprintf("the check filled its workspace (workspace_size %d bytes)", sb.WorkspaceSize)
	case waitErr != nil:
		return fail("docker: wait: %v", waitErr)
	case stdout.Err() != nil || stderr.Err() != nil:
		return fail("docker: output sink: %v", errors.Join(stdout.Err(), stderr.Err()))
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
	return res
}

// image is what the run needs from the resolved image.
type image struct {
	id  string
	env []string // the image configuration's environment, KEY=VALUE
}

// resolveImage applies the pull policy and returns the image's ID and
// configured environment.
func (r *Runtime) resolveImage(ctx context.Context, sb runtime.Sandbox) (image, error) {
	if sb.Pull == "always" {
		if err := r.pull(ctx, sb.Image); err != nil {
			return image{}, err
		}
	}
	img, err := r.cli.ImageInspect(ctx, sb.Image)
	if err != nil && isNotFound(err) && sb.Pull == "missing" {
		if err := r.pull(ctx, sb.Image); err != nil {
			return image{}, err
		}
		img, err = r.cli.ImageInspect(ctx, sb.Image)
	}
	if err != nil {
		if isNotFound(err) {
			return image{}, fmt.Errorf("docker: image %s is not present (pull: %s)", sb.Image, sb.Pull)
		}
		return image{}, fmt.Errorf("docker: inspect image %s: %w", sb.Image, err)
	}
	if img.ID == "" {
		return image{}, fmt.Errorf("docker: image %s has no id", sb.Image)
	}
	var env []string
	if img.Config != nil {
		env = img.Config.Env
	}
	return image{id: img.ID, env: env}, nil
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
