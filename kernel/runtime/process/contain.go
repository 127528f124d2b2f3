//go:build unix

package process

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/proofgate/proofgate/kernel/lock"
)

// containment is how one check is held: its process group, its cgroup
// where the host delegates one, and its process record (kernel/lock) in
// the run's procs directory.
type containment struct {
	kind   string // lock.ContainCgroup or lock.ContainGroup
	cgroup string
	fd     int    // open cgroup directory, -1 without one
	record string // record path, "" when spec.ProcDir is empty
	group  lock.Group
}

// contain prepares the containment of a check: it creates the cgroup and,
// with one, writes the record before the check starts (without one, the
// record can only name the process group once it exists).
func (r *Runtime) contain(check, procDir string) (*containment, error) {
	c := &containment{kind: lock.ContainGroup, fd: -1}
	if !r.noCgroup {
		if dir, fd, err := newCgroup(); err == nil {
			c.kind, c.cgroup, c.fd = lock.ContainCgroup, dir, fd
		}
	}
	if procDir == "" {
		return c, nil
	}
	owner, err := lock.Self(time.Now())
	if err != nil {
		c.release()
		return nil, fmt.Errorf("recording the check's processes: %w", err)
	}
	c.record = lock.NewGroupPath(procDir)
	c.group = lock.Group{Check: check, Owner: owner, Cgroup: c.cgroup, Containment: c.kind}
	if c.cgroup != "" {
		if err := lock.WriteGroup(c.record, c.group); err != nil {
			c.record = ""
			c.release()
			return nil, fmt.Errorf("recording the check's processes: %w", err)
		}
	}
	return c, nil
}

// start starts the command newCmd makes, inside the cgroup when there is
// one; a host that refuses to start a process there (no clone3, no write
// access to the cgroup) gets the process-group containment instead.
func (c *containment) start(newCmd func(*syscall.SysProcAttr) *exec.Cmd) (*exec.Cmd, error) {
	cmd := newCmd(sysProcAttr(c.fd))
	err := cmd.Start()
	if err != nil && c.fd >= 0 {
		c.dropCgroup()
		cmd = newCmd(sysProcAttr(-1))
		err = cmd.Start()
	}
	if c.fd >= 0 {
		closeFD(c.fd)
		c.fd = -1
	}
	return cmd, err
}

func (c *containment) dropCgroup() {
	closeFD(c.fd)
	c.fd = -1
	_, _ = lock.KillCgroup(c.cgroup)
	c.kind, c.cgroup = lock.ContainGroup, ""
	c.group.Cgroup, c.group.Containment = "", c.kind
}

// started records the check's process group, led by pid.
func (c *containment) started(pid int) error {
	if c.record == "" {
		return nil
	}
	start, err := lock.StartTime(pid)
	if err != nil {
		return fmt.Errorf("recording the check's processes: %w", err)
	}
	c.group.PGID, c.group.Start = pid, start
	if c.cgroup == "" {
		// the first record of this check: nothing to replace
		if err := lock.WriteGroup(c.record, c.group); err != nil {
			return fmt.Errorf("recording the check's processes: %w", err)
		}
		return nil
	}
	// The record written before the start (the cgroup) is succeeded by a
	// new one under a new name, then removed: renaming over it would make
	// ext4 (auto_da_alloc) write the new file's data back at once, the
	// costliest step of a governed tool call (ADR 0020). At every instant
	// a record names the check; for a moment two do, and Reap kills what
	// each names (the second finds it gone).
	next := lock.NewGroupPath(filepath.Dir(c.record))
	if err := lock.WriteGroup(next, c.group); err != nil {
		return fmt.Errorf("recording the check's processes: %w", err)
	}
	prev := c.record
	c.record = next
	if err := lock.RemoveGroup(prev); err != nil {
		return fmt.Errorf("recording the check's processes: %w", err)
	}
	return nil
}

// kill kills what is left of the check once its main process has exited
// (and is not yet reaped, so pgid is still its own): the process group and
// the cgroup with every descendant that left the group.
func (c *containment) kill(pgid int) error {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if c.cgroup == "" {
		return nil
	}
	if _, err := lock.KillCgroup(c.cgroup); err != nil {
		return err
	}
	c.cgroup = ""
	return nil
}

// release removes the cgroup (if kill did not) and the record. A cgroup
// that cannot be emptied keeps its record, for 'gc' to retry later.
func (c *containment) release() {
	if c.fd >= 0 {
		closeFD(c.fd)
		c.fd = -1
	}
	if c.cgroup != "" {
		if _, err := lock.KillCgroup(c.cgroup); err != nil {
			return
		}
	}
	if c.record != "" {
		_ = lock.RemoveGroup(c.record)
	}
}
