package docker

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Copy mode, bounded. The workspace lives on a size-limited tmpfs: a named
// volume of the local driver (type tmpfs, size = workspace_size), mounted
// at /workspace in the check's container. The daemon mounts such a volume
// while something uses it and unmounts it — dropping its content — when the
// last user lets go, so a copy into the created container would be lost
// before start. The copy therefore goes through a second container that is
// created on the same volume and never started (the holder): its archive
// upload keeps the volume mounted from the first entry until the archive
// ends, and the archive is ended only after the check. In order:
//
//  1. the walk streams the workspace into the holder, its root entry first
//     with a placeholder mode and, after every other entry, again with the
//     real mode;
//  2. the root's mode, read through the check's container (ContainerStatPath
//     mounts the same volume, which is still mounted), turns to the real
//     mode once the daemon has unpacked everything;
//  3. the check starts, runs and exits with the copy in place;
//  4. a probe file is appended to the archive: "no space left on device"
//     means the check filled its workspace (Outcome WorkspaceLimit); then
//     the archive ends and the holder is removed.
//
// The volume's content never touches the daemon's disk.

// LabelRole marks the containers that are not checks (the copy holder).
const LabelRole = "io.proofgate.role"

// probeSize is the size of the file appended after the check: tmpfs
// allocates whole pages, so a workspace with less than a page left is full.
const probeSize = 4096

// errCopyAborted ends an archive whose check did not run to the end.
var errCopyAborted = errors.New("workspace copy aborted")

// newVolumeName returns a fresh name for a workspace volume.
func newVolumeName() string {
	var b [12]byte
	rand.Read(b[:])
	return "proofgate-ws-" + hex.EncodeToString(b[:])
}

// workspaceVolumeOpts are the local driver's options for a copy-mode
// workspace of size bytes owned by uid:gid.
func workspaceVolumeOpts(size int64, uid, gid int) string {
	return fmt.Sprintf("rw,nosuid,nodev,exec,size=%d,uid=%d,gid=%d,mode=0700", size, uid, gid)
}

// createWorkspaceVolume creates the plan's workspace volume.
func (r *Runtime) createWorkspaceVolume(ctx context.Context, p *plan) error {
	_, err := r.cli.VolumeCreate(ctx, client.VolumeCreateOptions{
		Name:   p.wsVolume,
		Driver: "local",
		DriverOpts: map[string]string{
			"type": "tmpfs", "device": "tmpfs", "o": workspaceVolumeOpts(p.wsSize, p.uid, p.gid),
		},
		Labels: p.config.Labels,
	})
	if err != nil {
		return fmt.Errorf("docker: create workspace volume: %w", err)
	}
	return nil
}

// removeVolume removes a workspace volume; one already gone is removed.
func (r *Runtime) removeVolume(ctx context.Context, name string) error {
	_, err := r.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("docker: remove workspace volume %s: %w", name, err)
	}
	return nil
}

// workspaceLimitError is a copy that did not fit the workspace_size.
type workspaceLimitError struct{ msg string }

func (e *workspaceLimitError) Error() string { return e.msg }

// wsCopy is a workspace copy in flight through a holder container.
type wsCopy struct {
	r        *Runtime
	holder   string
	pw       *io.PipeWriter
	pr       *io.PipeReader
	walked   chan error // the walk's result, once everything but the end is sent
	finish   chan bool  // true: append the probe and end; false: abort
	done     chan error // the upload's result
	realMode int64      // the workspace root's mode, set by the archive's last entry
	mu       sync.Mutex
	ended    bool
	result   error
}

// startCopy creates the holder and streams the workspace into the volume;
// it returns once the daemon has read all of it but the end, which
// awaitUnpacked then waits for through the check's container. The
// returned wsCopy must be closed; it is non-nil whenever the holder exists.
func (r *Runtime) startCopy(ctx context.Context, p *plan, dir string, exclude []string) (*wsCopy, error) {
	labels := map[string]string{LabelRole: "copy-holder"}
	for k, v := range p.config.Labels {
		labels[k] = v
	}
	h, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: p.config.Image, Cmd: p.config.Cmd, Entrypoint: []string{}, User: p.config.User,
			NetworkDisabled: true, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, LogConfig: container.LogConfig{Type: "none"},
			CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: p.wsVolume, Target: WorkspaceTarget, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}}},
	})
	if err != nil {
		return nil, fmt.Errorf("docker: create workspace copy holder: %w", err)
	}
	c := &wsCopy{r: r, holder: h.ID, walked: make(chan error, 1), finish: make(chan bool, 1), done: make(chan error, 1)}
	c.pr, c.pw = io.Pipe()
	bg := context.WithoutCancel(ctx)
	go func() {
		_, err := r.cli.CopyToContainer(bg, c.holder, client.CopyToContainerOptions{DestinationPath: WorkspaceTarget, Content: c.pr})
		c.pr.CloseWithError(errors.New("copy request ended"))
		c.done <- err
	}()
	fi, err := os.Stat(dir)
	if err != nil {
		return c, fmt.Errorf("workspace copy: %w", err)
	}
	c.realMode = int64(fi.Mode().Perm())
	placeholder := c.realMode ^ 0o001
	go c.stream(dir, tarOptions{uid: p.uid, gid: p.gid, limit: r.copyLimit, size: p.wsSize, exclude: exclude, rootMode: placeholder})
	select {
	case err := <-c.walked:
		if err != nil {
			return c, c.copyError(err)
		}
	case err := <-c.done:
		c.setResult(err)
		return c, c.copyError(err)
	case <-ctx.Done():
		return c, fmt.Errorf("cancelled during the workspace copy: %w", ctx.Err())
	}
	return c, nil
}

// stream writes the archive: the walk, the root's real mode, then (told by
// finish) the probe and the end.
func (c *wsCopy) stream(dir string, o tarOptions) {
	tw := tar.NewWriter(c.pw)
	root, err := walkWorkspace(tw, dir, o)
	if err == nil {
		err = tw.WriteHeader(&root)
	}
	if err == nil {
		err = tw.Flush()
	}
	c.walked <- err
	if err != nil {
		c.pw.CloseWithError(err)
		return
	}
	if !<-c.finish {
		c.pw.CloseWithError(errCopyAborted)
		return
	}
	name := ".proofgate-probe-" + newVolumeName()[len("proofgate-ws-"):]
	err = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: probeSize, Mode: 0o600, Uid: o.uid, Gid: o.gid, Format: tar.FormatPAX})
	if err == nil {
		_, err = tw.Write(make([]byte, probeSize))
	}
	if err == nil {
		err = tw.Close()
	}
	c.pw.CloseWithError(err)
}

// awaitUnpacked polls the root of the /workspace of the check's container
// (id) until it has the real mode, which the archive sets after every
// other entry.
func (c *wsCopy) awaitUnpacked(ctx context.Context, id string) error {
	real := c.realMode
	deadline := time.Now().Add(2 * time.Minute)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		st, err := c.r.cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: WorkspaceTarget})
		if err == nil && int64(st.Stat.Mode.Perm()) == real {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("docker: the workspace copy was not unpacked within 2m (last stat: %v)", err)
		}
		t := time.NewTimer(delay)
		select {
		case err := <-c.done:
			t.Stop()
			c.setResult(err)
			return c.copyError(err)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cancelled during the workspace copy: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// copyError turns a walk or upload failure into the check's error: a
// workspace that does not fit is a *workspaceLimitError; a walk error
// names the path (it is the workspace's, not the daemon's); anything else
// is the daemon's.
func (c *wsCopy) copyError(err error) error {
	switch {
	case err == nil:
		return errors.New("docker: the workspace copy ended before the check started")
	case errors.Is(err, ErrWorkspaceSize):
		return &workspaceLimitError{fmt.Sprintf("the workspace does not fit its workspace_size: %v", err)}
	case noSpace(err):
		return &workspaceLimitError{"the workspace copy does not fit its workspace_size (no space left on the workspace volume)"}
	case strings.HasPrefix(err.Error(), "workspace copy:"):
		return err
	default:
		return fmt.Errorf("docker: copy workspace: %w", err)
	}
}

func noSpace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no space left on device")
}

func (c *wsCopy) setResult(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.ended, c.result = true, err
	}
}

// wait returns the upload's result, waiting for it once.
func (c *wsCopy) wait() error {
	c.mu.Lock()
	ended := c.ended
	c.mu.Unlock()
	if !ended {
		c.setResult(<-c.done)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.result
}

// probe appends the probe file and ends the archive after the check, and
// reports whether the workspace was full.
func (c *wsCopy) probe() (full bool, err error) {
	select {
	case c.finish <- true:
	default:
	}
	err = c.wait()
	if noSpace(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("docker: workspace probe: %w", err)
	}
	return false, nil
}

// close aborts the archive if it is still open, waits for the upload and
// removes the holder.
func (c *wsCopy) close(ctx context.Context) error {
	select {
	case c.finish <- false:
	default:
	}
	c.pr.CloseWithError(errCopyAborted)
	c.wait()
	return c.r.remove(ctx, c.holder)
}
