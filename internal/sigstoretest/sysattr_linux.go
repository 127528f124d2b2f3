package sigstoretest

import (
	"os"
	"syscall"
)

// isolated puts a process in a network namespace of its own (and a user
// namespace mapping the caller's ids when not root).
func isolated() (*syscall.SysProcAttr, error) {
	if os.Geteuid() == 0 {
		return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}, nil
	}
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}, nil
}

// groupAttr adds to attr (nil: none) a process group of the child's own
// and SIGKILL when the test process dies.
func groupAttr(attr *syscall.SysProcAttr) *syscall.SysProcAttr {
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setpgid = true
	attr.Pdeathsig = syscall.SIGKILL
	return attr
}
