//go:build !linux

package sigstoretest

import (
	"errors"
	"syscall"
)

// isolated: network namespaces are Linux's; elsewhere the TSA runs on the
// host network.
func isolated() (*syscall.SysProcAttr, error) {
	return nil, errors.New("network namespaces need Linux")
}

// groupAttr adds to attr (nil: none) a process group of the child's own.
func groupAttr(attr *syscall.SysProcAttr) *syscall.SysProcAttr {
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setpgid = true
	return attr
}
