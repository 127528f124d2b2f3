package process

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/proofgate/proofgate/internal/lock"
)

// parentDeathSignal says whether a check's main process is started with
// a parent-death signal (Linux: SIGKILL when the harness thread that
// forked it dies; Run keeps that thread locked until the check is reaped).
const parentDeathSignal = true

// sysProcAttr puts the check in its own process group, kills it when the
// harness dies and, with cgroupFD >= 0, starts it inside that cgroup
// (clone3 CLONE_INTO_CGROUP), so that not even its first instruction runs
// outside.
func sysProcAttr(cgroupFD int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if cgroupFD >= 0 {
		a.UseCgroupFD, a.CgroupFD = true, cgroupFD
	}
	return a
}

// newCgroup creates a cgroup v2 directory for one check below the
// harness's own cgroup and opens it for CLONE_INTO_CGROUP. It fails where
// the host does not delegate a writable cgroup v2 to the harness.
func newCgroup() (dir string, fd int, err error) {
	parent, err := ownCgroup()
	if err != nil {
		return "", -1, err
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", -1, err
	}
	dir = filepath.Join(parent, lock.CgroupPrefix+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", -1, err
	}
	fd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return "", -1, err
	}
	return dir, fd, nil
}

var (
	ownOnce sync.Once
	ownDir  string
	ownErr  error
)

// ownCgroup is the cgroup v2 directory this process runs in.
func ownCgroup() (string, error) {
	ownOnce.Do(func() { ownDir, ownErr = findOwnCgroup() })
	return ownDir, ownErr
}

func findOwnCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	rel, ok := "", false
	for _, line := range strings.Split(string(b), "\n") {
		if p, found := strings.CutPrefix(line, "0::"); found {
			rel, ok = p, true
		}
	}
	if !ok {
		return "", errors.New("no cgroup v2 membership")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, found := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !found || len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		root, mnt := f[3], unescapeMount(f[4])
		switch {
		case root == "/":
			return filepath.Join(mnt, rel), nil
		case rel == root || strings.HasPrefix(rel, root+"/"):
			return filepath.Join(mnt, strings.TrimPrefix(rel, root)), nil
		}
	}
	return "", errors.New("no cgroup2 mount holds this process's cgroup")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out = append(out, byte(n))
				i += 3
				continue
			}
		}
		out = append(out, s[i])
	}
	return string(out)
}

func closeFD(fd int) { _ = unix.Close(fd) }

// exitWaiter waits for the check's main process to exit without reaping
// it: while it is a zombie its pid cannot be reused, so signalling the
// group -pgid can only ever reach the check's own processes.
type exitWaiter struct{ cmd *exec.Cmd }

func newExitWaiter(cmd *exec.Cmd) *exitWaiter { return &exitWaiter{cmd: cmd} }

func (w *exitWaiter) exited() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, w.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

func (w *exitWaiter) reap() error { return w.cmd.Wait() }
