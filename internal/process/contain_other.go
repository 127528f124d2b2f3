//go:build unix && !linux

package process

import (
	"errors"
	"os/exec"
	"syscall"
)

// Off Linux there is no parent-death signal and no cgroup: a check can
// outlive a harness that is killed, and the attestation says so.
const parentDeathSignal = false

func sysProcAttr(int) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func newCgroup() (string, int, error) { return "", -1, errors.New("cgroups: not supported on this OS") }

func closeFD(int) {}

// exitWaiter reaps the main process as soon as it exits: without waitid's
// WNOWAIT its pid may be reused before the group is killed, a degradation
// this OS cannot avoid.
type exitWaiter struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func newExitWaiter(cmd *exec.Cmd) *exitWaiter {
	return &exitWaiter{cmd: cmd, done: make(chan struct{})}
}

func (w *exitWaiter) exited() {
	w.err = w.cmd.Wait()
	close(w.done)
}

func (w *exitWaiter) reap() error {
	<-w.done
	return w.err
}
