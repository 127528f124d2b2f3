package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupDrain bounds how long KillCgroup waits for a killed cgroup to
// empty.
const cgroupDrain = 5 * time.Second

func killGroup(g Group) (string, error) {
	res := ResultGone
	if g.Cgroup != "" {
		r, err := KillCgroup(g.Cgroup)
		if err != nil {
			return "", err
		}
		res = r
	}
	if g.PGID > 1 {
		r, err := killPG(g.PGID, g.Start)
		if err != nil {
			return "", err
		}
		if r != ResultGone && res != ResultKilled {
			res = r
		}
	}
	return res, nil
}

// killPG sends SIGKILL to process group pgid when it is provably the one
// recorded with leader start time start.
func killPG(pgid int, start uint64) (string, error) {
	st, err := readStat(pgid)
	switch {
	case err == nil && st.start != start:
		// The pid was reused, which the kernel does only once nothing uses
		// it as a process group any more: the recorded group is gone.
		return ResultPidReused, nil
	case err == nil:
		// The leader (perhaps a zombie) is the recorded process.
	case errors.Is(err, os.ErrNotExist):
		// The leader is gone; members may remain, and while they do the
		// kernel does not hand the pgid to a new process.
		if !groupHasMembers(pgid) {
			return ResultGone, nil
		}
	default:
		return "", err
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return ResultGone, nil
		}
		return "", fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	// SIGKILL is delivered asynchronously: "killed" means dead, as for a
	// cgroup, so wait (bounded) until no member runs any more.
	for deadline := time.Now().Add(cgroupDrain); groupHasMembers(pgid); {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("process group %d: still running %s after SIGKILL", pgid, cgroupDrain)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return ResultKilled, nil
}

func groupHasMembers(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: let kill(2) answer
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.pgrp == pgid && st.state != 'Z' {
			return true
		}
	}
	return false
}

// KillCgroup kills every process in the cgroup v2 directory dir (a
// directory whose name starts with CgroupPrefix), waits until it is empty
// and removes it. It returns ResultKilled when processes were running,
// ResultGone when none were (or the directory no longer exists).
func KillCgroup(dir string) (string, error) {
	if !validCgroupPath(dir) {
		return "", fmt.Errorf("cgroup %q: not a ProofGate cgroup", dir)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return ResultGone, nil
		}
		return "", fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", fmt.Errorf("cgroup %s: not on a cgroup2 file system", dir)
	}
	pids, err := cgroupPids(dir)
	if err != nil {
		return "", err
	}
	res := ResultGone
	deadline := time.Now().Add(cgroupDrain)
	for len(pids) > 0 {
		res = ResultKilled
		if time.Now().After(deadline) {
			return "", fmt.Errorf("cgroup %s: %d process(es) still running %s after SIGKILL", dir, len(pids), cgroupDrain)
		}
		// cgroup.kill (Linux 5.14) kills atomically, forks included;
		// without it, kill what is listed until nothing is.
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(2 * time.Millisecond)
		if pids, err = cgroupPids(dir); err != nil {
			return "", err
		}
	}
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return res, nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return "", fmt.Errorf("cgroup %s: remove: %w", dir, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func cgroupPids(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 {
			return nil, fmt.Errorf("cgroup %s: cgroup.procs: bad pid %q", dir, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

func groupRuns(g Group) (bool, error) {
	if g.Cgroup != "" {
		pids, err := cgroupPids(g.Cgroup)
		if err != nil {
			return true, err
		}
		if len(pids) > 0 {
			return true, nil
		}
	}
	if g.PGID <= 1 {
		return false, nil
	}
	st, err := readStat(g.PGID)
	switch {
	case err == nil && st.start != g.Start:
		return false, nil // the pid was reused: the recorded group is gone
	case err == nil && st.state != 'Z':
		return true, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return true, err
	}
	return groupHasMembers(g.PGID), nil
}
