//go:build unix

package process

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
)

// containment is how one check is held: its process group, its cgroup
// where the host delegates one, and its process record (internal/lock) in
// the run's procs directory, published from a record slot.
type containment struct {
	kind   string // lock.ContainCgroup or lock.ContainGroup
	cgroup string
	fd     int    // open cgroup directory, -1 without one
	dir    string // the procs directory, "" when nothing is recorded
	keep   bool   // slots go back to the pool (Spec.KeepRecords)
	slot   *lock.Slot
	group  lock.Group
}

// contain prepares the containment of a check: it creates the cgroup and,
// with one, publishes the record before the check starts (without one,
// the record can only name the process group once it exists).
func (r *Runtime) contain(check, procDir string, keep bool) (*containment, error) {
	c := &containment{kind: lock.ContainGroup, fd: -1, keep: keep}
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
	c.dir = procDir
	c.group = lock.Group{Check: check, Owner: owner, Cgroup: c.cgroup, Containment: c.kind}
	if c.cgroup != "" {
		if c.slot, err = c.publish(); err != nil {
			c.dir = ""
			c.release()
			return nil, fmt.Errorf("recording the check's processes: %w", err)
		}
	}
	return c, nil
}

// publish publishes c.group as a record from a slot of the procs dir.
func (c *containment) publish() (*lock.Slot, error) {
	s, err := lock.TakeSlot(c.dir)
	if err != nil {
		return nil, err
	}
	if _, err := s.Publish(c.group); err != nil {
		s.Discard()
		return nil, err
	}
	return s, nil
}

// done unpublishes s and keeps it for the next check or removes it.
func (c *containment) done(s *lock.Slot) error {
	err := s.Unpublish()
	if c.keep && err == nil {
		s.Put()
	} else {
		s.Discard()
	}
	return err
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
	if c.dir == "" {
		return nil
	}
	start, err := lock.StartTime(pid)
	if err != nil {
		return fmt.Errorf("recording the check's processes: %w", err)
	}
	c.group.PGID, c.group.Start = pid, start
	// The record published before the start (the cgroup) is succeeded
	// by one under a new name, then unpublished: a published record is
	// never rewritten. At every instant a record names the check; for a
	// moment two do, and Reap kills what each names (the second finds it
	// gone).
	next, err := c.publish()
	if err != nil {
		return fmt.Errorf("recording the check's processes: %w", err)
	}
	prev := c.slot
	c.slot = next
	if prev != nil {
		if err := c.done(prev); err != nil {
			return fmt.Errorf("recording the check's processes: %w", err)
		}
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
// that cannot be emptied keeps its record, for 'gc' to retry later (its
// slot is then never reused).
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
	if c.slot != nil {
		_ = c.done(c.slot)
		c.slot = nil
	}
}
